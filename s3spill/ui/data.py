"""What the web view shows, read from the store: sessions, their usage, GC plans, purge records.

Why listing-based: a session's objects are one prefix (``v1/sessions/<hash>/``), so the
session list, sizes and counts come from LIST pages without opening any artifact; usage
events are the session's NDJSON parts (and Parquet day files when DuckDB is installed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from s3spill import keys
from s3spill.errors import NotFound, S3SpillError
from s3spill.fleet.purge import ErasureRecord
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore
from s3spill.usage.source import part_events, usage_objects

log = get_logger("s3spill.ui")

__all__ = ["SessionSummary", "bytes_per_tool_day", "erasure_records", "gc_plans", "session_events",
           "sessions"]

#: Most events one session's timeline shows (newest last).
MAX_EVENTS = 2000


@dataclass
class SessionSummary:
    shash: str
    artifacts: int = 0
    stored_bytes: int = 0
    live: int = 0
    usage_objects: int = 0
    quota: dict[str, Any] = field(default_factory=dict)
    last_modified: str = ""


def sessions(store: ObjectStore) -> list[SessionSummary]:
    """Every session of the store with its counts, newest activity first."""
    found: dict[str, SessionSummary] = {}
    quota_keys: list[tuple[str, str]] = []
    for info in store.list(keys.SESSIONS + "/"):
        parsed = keys.parse_key(info.key)
        if parsed.session_hash is None:
            continue
        s = found.setdefault(parsed.session_hash, SessionSummary(parsed.session_hash))
        s.last_modified = max(s.last_modified, info.last_modified.isoformat(timespec="seconds"))
        if parsed.kind == "artifact":
            s.artifacts += 1
            s.stored_bytes += info.size
        elif parsed.kind == "live_state":
            s.live += 1
        elif parsed.kind == "usage_log":
            s.usage_objects += 1
        elif parsed.kind == "usage":
            quota_keys.append((parsed.session_hash, info.key))
    for shash, key in quota_keys:
        try:
            data = orjson.loads(store.get(key))
            found[shash].quota = {k: v for k, v in data.items() if isinstance(v, (int, float, str))}
        except (S3SpillError, ValueError):
            continue
    return sorted(found.values(), key=lambda s: s.last_modified, reverse=True)


def _events_of(store: ObjectStore, shash: str | None, since_day: str | None = None
               ) -> Iterator[dict[str, Any]]:
    parquet = []
    for obj in usage_objects(store, session_hash=shash):
        if since_day and obj.day < since_day:
            continue
        if obj.compacted:
            parquet.append(obj)
            continue
        try:
            yield from part_events(store.get(obj.key))
        except (S3SpillError, ValueError) as exc:
            log.warning("ui.usage_unreadable", key=obj.key, error=type(exc).__name__)
    if parquet:
        try:
            from s3spill.usage.engine import connect

            con, _ = connect(store, parquet)
            cur = con.execute("SELECT * FROM events")
            names = [d[0] for d in cur.description]
            for row in cur.fetchall():
                yield dict(zip(names, row, strict=True))
            con.close()
        except S3SpillError as exc:  # DuckDB missing: the parts above still show
            log.info("ui.day_files_skipped", error=type(exc).__name__)


def session_events(store: ObjectStore, shash: str) -> list[dict[str, Any]]:
    """The session's usage events in time order, deduplicated by id (at most MAX_EVENTS, newest)."""
    seen: dict[str, dict[str, Any]] = {}
    for e in _events_of(store, shash):
        seen.setdefault(str(e.get("id")), e)
    return sorted(seen.values(), key=lambda e: str(e.get("ts")))[-MAX_EVENTS:]


def bytes_per_tool_day(store: ObjectStore, since_day: str | None = None) -> dict[str, dict[str, int]]:
    """Bytes stored (raw) per tool and per day, from the spill events."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    seen: set[str] = set()
    for e in _events_of(store, None, since_day):
        if e.get("op") != "spill" or not e.get("spilled") or e.get("id") in seen:
            continue
        seen.add(str(e.get("id")))
        out[str(e.get("tool"))][str(e.get("ts"))[:10]] += int(e.get("raw_bytes") or 0)
    return {tool: dict(days) for tool, days in out.items()}


def gc_plans(store: ObjectStore) -> list[str]:
    """Ids of the plans kept in the store (``gc plan --out store``), newest first."""
    ids = [i.key.rsplit("/", 1)[1].removesuffix(".jsonl") for i in store.list(keys.GC_PLANS + "/")]
    return sorted(ids, reverse=True)


def erasure_records(store: ObjectStore) -> list[ErasureRecord]:
    """Every purge's audit record (who asked, what was deleted; never content)."""
    out = []
    for info in store.list(keys.ERASURES + "/"):
        try:
            out.append(ErasureRecord.model_validate_json(store.get(info.key)))
        except (NotFound, S3SpillError, ValueError):
            continue
    return out
