"""Compaction: a session's usage parts of one past day become one Parquet day file.

Why: a long-lived process writes a part per batch, a one-shot process one per call, so a
busy fleet accumulates many small NDJSON objects; a day file is one object, columnar (a
``stats`` query reads only the columns it needs, not the shown text) and zstd-compressed.

The order makes it safe to be killed anywhere: the day file is written create-once under
a content-addressed key, read back and checked to hold every event id of every source;
only then is each source deleted, conditionally on the ETag it was listed with. Until
then both exist, and readers deduplicate by event id (:mod:`s3spill.usage.engine`), so
nothing is counted twice or lost. A source that cannot be verified is kept.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from s3spill import keys
from s3spill.errors import AlreadyExists, NotFound, PreconditionFailed, S3SpillError
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore
from s3spill.usage.engine import connect
from s3spill.usage.source import UsageObject, usage_objects

__all__ = ["CompactReport", "compact_usage"]

log = get_logger("s3spill.usage")


@dataclass
class CompactReport:
    days: int = 0
    sources_deleted: int = 0
    events: int = 0
    kept: list[str] = field(default_factory=list)


def compact_usage(store: ObjectStore, *, session_hash: str | None = None, now: datetime | None = None
                  ) -> CompactReport:
    """Compact every finished day (before today, UTC) of one session or of the store."""
    today = (now or datetime.now(UTC)).date().isoformat()
    groups: dict[tuple[str, str], list[UsageObject]] = defaultdict(list)
    for obj in usage_objects(store, session_hash=session_hash):
        if obj.day < today:
            groups[(obj.session_hash, obj.day)].append(obj)
    report = CompactReport()
    for (shash, day), objs in sorted(groups.items()):
        if len(objs) == 1 and objs[0].compacted:
            continue
        try:
            _compact_day(store, shash, day, objs, report)
        except (S3SpillError, OSError) as exc:
            log.warning("usage.compact_failed", session_hash=shash, day=day, error=type(exc).__name__)
            report.kept.extend(o.key for o in objs)
    return report


def _erased(store: ObjectStore, shash: str) -> bool:
    try:
        store.head(keys.erasure_key(shash))
        return True
    except NotFound:
        return False


def _compact_day(store: ObjectStore, shash: str, day: str, objs: list[UsageObject],
                 report: CompactReport) -> None:
    if _erased(store, shash):  # a purge deletes these; never write them again
        report.kept.extend(o.key for o in objs)
        return
    prefixes = (keys.usage_prefix(shash, day), keys.usage_prefix(shash, day, days=True))
    etags = {i.key: i.etag for prefix in prefixes for i in store.list(prefix)}
    con, _ = connect(store, objs)
    with tempfile.TemporaryDirectory(prefix="s3spill-usage-") as tmp:
        out = Path(tmp) / "day.parquet"
        con.execute(f"COPY (SELECT * FROM events ORDER BY ts, id) TO '{out}' "  # noqa: S608 - our temp path
                    "(FORMAT parquet, COMPRESSION zstd)")
        data = out.read_bytes()
        ids = {r[0] for r in con.execute("SELECT id FROM events").fetchall()}
        con.close()
    key = keys.usage_day_key(shash, day, hashlib.sha256(data).hexdigest())
    try:
        put = store.put_if_absent(key, data, content_type="application/vnd.apache.parquet")
        if _erased(store, shash):  # sealed while we wrote: undo, as the purge expects
            store.delete_if_match(key, put.etag)
            report.kept.extend(o.key for o in objs)
            return
    except AlreadyExists:
        pass  # content-addressed: the same events, compacted before (read back below)
    day_obj = UsageObject(key, shash, day, len(data), True)
    check, _ = connect(store, [day_obj])
    written = {r[0] for r in check.execute("SELECT id FROM events").fetchall()}
    check.close()
    report.days += 1
    report.events += len(written)
    for obj in objs:
        if obj.key == key:
            continue
        src, _ = connect(store, [obj])
        src_ids = {r[0] for r in src.execute("SELECT id FROM events").fetchall()}
        src.close()
        etag = etags.get(obj.key)
        if etag is None or not src_ids <= written or not src_ids <= ids:
            report.kept.append(obj.key)
            continue
        try:
            store.delete_if_match(obj.key, etag)
            report.sources_deleted += 1
        except (NotFound, PreconditionFailed):
            report.kept.append(obj.key)
