"""Which usage objects a question covers, found by listing only (no artifact is read).

Why listing by key: a usage object's key names its session and its day partition
(``v1/sessions/<hash>/usage/dt=YYYY-MM-DD/``), so a session's usage is one prefix listing
and ``--since`` drops whole days before a byte is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

import orjson

from s3spill import keys
from s3spill.store.base import ObjectInfo, ObjectStore

__all__ = ["UsageObject", "part_events", "part_lines", "usage_objects"]

#: ``-f<n>.ndjson``: plain, ``n`` bytes of fact lines first; ``-z<n>.ndjson.zst``: ``n`` bytes of
#: a zstd frame of them first (s3spill.usage.recorder.zstd_part).
_FACTS = re.compile(
    r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}-(?:f([0-9]{1,15})\.ndjson|z([0-9]{1,15})\.ndjson\.zst)\Z")
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass(frozen=True)
class UsageObject:
    key: str
    session_hash: str
    day: str
    size: int
    compacted: bool
    #: A part's leading fact lines (or zstd frame of them), in bytes (named in its key); None: an
    #: older part, shown inline.
    facts: int | None = None
    #: A zstd part (``.ndjson.zst``): its bytes decompress to the plain layout.
    zstd: bool = False

    @classmethod
    def of(cls, info: ObjectInfo) -> UsageObject | None:
        parsed = keys.parse_key(info.key)
        if parsed.kind != "usage_log" or parsed.session_hash is None or parsed.name is None:
            return None
        *_, part, leaf = parsed.name.split("/")
        named = _FACTS.match(leaf)
        facts = min(int(named[1] or named[2]), info.size) if named else None
        return cls(info.key, parsed.session_hash, part[3:], info.size, leaf.endswith(".parquet"), facts,
                   leaf.endswith(".zst"))


def usage_objects(store: ObjectStore, *, session_hash: str | None = None,
                  since: date | None = None) -> Iterator[UsageObject]:
    """Every usage object of one session (or of the store), from day ``since`` on."""
    prefix = keys.usage_prefix(session_hash) if session_hash else keys.SESSIONS + "/"
    for info in store.list(prefix):
        found = UsageObject.of(info)
        if found is not None and (since is None or found.day >= since.isoformat()):
            yield found


def part_lines(data: bytes) -> bytes:
    """A part's NDJSON from its stored bytes (or a leading range of them): zstd frames
    decompressed, all of them; a plain part as it is (its first byte is ``{``, never zstd's magic)."""
    if not data.startswith(_ZSTD_MAGIC):
        return data
    import zstandard

    out: bytes = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True).decompress(data)
    return out


def part_events(body: bytes) -> list[dict[str, Any]]:
    """A part's events, each with its shown text (inline, or from the shown rows that follow);
    ``body`` as stored, plain or zstd."""
    facts: list[dict[str, Any]] = []
    shown: dict[str, str] = {}
    for line in part_lines(body).splitlines():
        if not line.strip():
            continue
        row = orjson.loads(line)
        if row.get("op") is None:
            shown[str(row.get("id"))] = str(row.get("shown") or "")
        else:
            facts.append(row)
    for row in facts:
        if row.get("shown") is None:
            row["shown"] = shown.get(str(row.get("id")), "")
    return facts
