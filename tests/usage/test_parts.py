"""A usage part's layout: fact lines first, shown texts after, and readers that rely on it."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

from s3spill import keys
from s3spill.store.base import ByteRange, ObjectInfo
from s3spill.store.local import LocalStore
from s3spill.ui.data import session_events
from s3spill.usage.events import UsageEvent
from s3spill.usage.recorder import UsageRecorder
from s3spill.usage.source import UsageObject, part_events, usage_objects
from s3spill.usage.stats import compute_stats

SHASH = keys.session_hash("parts-session")
DAY = datetime.now(UTC).date().isoformat()
TEXT = "the page the model read, line after line\n" * 50


class CountingStore(LocalStore):
    """A local store that remembers every read (key and range)."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.reads: list[tuple[str, ByteRange | None]] = []

    def get(self, key: str, byte_range: ByteRange | None = None) -> bytes:
        self.reads.append((key, byte_range))
        return super().get(key, byte_range)


def _event(i: int, op: str = "spill") -> UsageEvent:
    return UsageEvent(session=SHASH, op=op, tool="build", artifact=f"a{i}", spilled=op == "spill",
                      raw_bytes=100_000, stored_bytes=9_000, threshold=50_000, shown=f"{i}: {TEXT}",
                      shown_chars=len(TEXT), shown_bytes=len(TEXT), id=f"ev{i:06d}",
                      ts=f"{DAY}T10:00:00.{i % 1000:03d}Z")


def test_stats_reads_only_the_fact_lines_of_each_part(tmp_path: Path) -> None:
    """``stats`` asks for ``[0, facts)`` of a part (named in its key): no shown text is read."""
    store = CountingStore(f"{tmp_path}/s")
    rec = UsageRecorder(store, batch=False)
    for i in range(6):
        rec.record(_event(i))
        rec.record(_event(i, "read"))
    objs = list(usage_objects(store))
    assert len(objs) == 12 and all(o.facts is not None and 0 < o.facts < o.size for o in objs)
    store.reads.clear()
    stats = compute_stats(store)
    assert stats.events == 12 and stats.tools[0].reread == 6
    assert sorted(store.reads) == sorted((o.key, (0, o.facts)) for o in objs)
    fetched = b"".join(store.get(k, r) for k, r in list(store.reads))
    assert TEXT.encode() not in fetched


def test_a_part_with_the_shown_text_inline_is_still_read(tmp_path: Path) -> None:
    """A part written before the split (``shown`` inline, no length in its key) reads whole."""
    store = LocalStore(f"{tmp_path}/s")
    rows = [{**dataclasses.asdict(_event(i)), "v": 1} for i in range(3)]
    body = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    store.put_if_absent(keys.usage_part_key(SHASH, DAY), body)
    (obj,) = usage_objects(store)
    assert obj.facts is None
    assert compute_stats(store).events == 3
    shown = [e["shown"] for e in session_events(store, SHASH)]
    assert shown == [f"{i}: {TEXT}" for i in range(3)]


def test_the_web_view_and_the_reader_join_the_shown_text_back() -> None:
    """Each event of a split part gets its own shown text back, by id."""
    from s3spill.usage.recorder import part_body

    body, facts = part_body([_event(1), _event(2, "read")])
    assert TEXT.encode() not in body[:facts] and all(b'"op"' in line for line in body[:facts].splitlines())
    events = part_events(body)
    assert [(e["id"], e["shown"]) for e in events] == [("ev000001", f"1: {TEXT}"), ("ev000002", f"2: {TEXT}")]


def test_a_random_name_that_looks_like_a_length_is_not_one() -> None:
    """``-f`` followed by digits inside the random part of an older key names no length."""
    prefix = keys.usage_prefix(SHASH, DAY)
    when = datetime.now(UTC)
    old = UsageObject.of(ObjectInfo(key=f"{prefix}20261201T000000Z-f12345678901.ndjson", size=10, etag="e",
                                    last_modified=when))
    new = UsageObject.of(ObjectInfo(key=f"{prefix}20261201T000000Z-f12345678901-f7.ndjson", size=10,
                                    etag="e", last_modified=when))
    assert old is not None and old.facts is None
    assert new is not None and new.facts == 7


def test_a_fact_line_holds_every_field_but_the_shown_text_and_no_nulls() -> None:
    """Every column but ``shown`` is written when set (in declaration order), none as null."""
    import orjson

    from s3spill.usage.events import FACT_FIELDS

    full = UsageEvent(session=SHASH, op="read", tool="build", shown="page", shown_chars=4, shown_bytes=4,
                      artifact="a", source_id="s", via="v", call_id="c", mode="stored", raw_bytes=1,
                      stored_bytes=2, threshold=3, first_line=4, last_line=5, total_lines=6, matches=7,
                      masked=8, degraded="d", id="i", ts=f"{DAY}T10:00:00.000Z")
    facts, shown = full.encode()
    assert facts.endswith(b"\n") and shown is not None and shown.endswith(b"\n")
    assert tuple(orjson.loads(facts)) == FACT_FIELDS and "shown" not in FACT_FIELDS
    assert orjson.loads(shown) == {"id": "i", "shown": "page"}
    bare = orjson.loads(_event(1).fact_json())
    assert None not in bare.values() and "via" not in bare and "matches" not in bare
