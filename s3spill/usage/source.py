"""Which usage objects a question covers, found by listing only (no artifact is read).

Why listing by key: a usage object's key names its session and its day partition
(``v1/sessions/<hash>/usage/dt=YYYY-MM-DD/``), so a session's usage is one prefix listing
and ``--since`` drops whole days before a byte is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

from s3spill import keys
from s3spill.store.base import ObjectInfo, ObjectStore

__all__ = ["UsageObject", "usage_objects"]


@dataclass(frozen=True)
class UsageObject:
    key: str
    session_hash: str
    day: str
    size: int
    compacted: bool

    @classmethod
    def of(cls, info: ObjectInfo) -> UsageObject | None:
        parsed = keys.parse_key(info.key)
        if parsed.kind != "usage_log" or parsed.session_hash is None or parsed.name is None:
            return None
        *_, part, leaf = parsed.name.split("/")
        return cls(info.key, parsed.session_hash, part[3:], info.size, leaf.endswith(".parquet"))


def usage_objects(store: ObjectStore, *, session_hash: str | None = None,
                  since: date | None = None) -> Iterator[UsageObject]:
    """Every usage object of one session (or of the store), from day ``since`` on."""
    prefix = keys.usage_prefix(session_hash) if session_hash else keys.SESSIONS + "/"
    for info in store.list(prefix):
        found = UsageObject.of(info)
        if found is not None and (since is None or found.day >= since.isoformat()):
            yield found
