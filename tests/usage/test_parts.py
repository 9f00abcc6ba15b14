"""A usage part's layout: fact lines first, shown texts after (two zstd frames; plain NDJSON before),
and readers that rely on it."""

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
from s3spill.usage.source import UsageObject, part_events, part_lines, usage_objects
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
    fetched = [part_lines(store.get(k, r)) for k, r in list(store.reads)]
    assert all(f.count(b"\n") == 1 and b'"op"' in f for f in fetched)  # one fact line each
    assert not any(TEXT.encode() in f for f in fetched)


def _plain_part(store: LocalStore, events: list[UsageEvent]) -> str:
    """Write ``events`` as the writer before zstd parts did: plain NDJSON, ``-f<n>.ndjson``."""
    from s3spill.usage.recorder import part_body

    body, facts = part_body(events)
    key = keys.usage_part_key(SHASH, DAY, facts=facts)
    store.put_if_absent(key, body, content_type="application/x-ndjson")
    return key


def test_a_part_is_two_zstd_frames_of_the_plain_layout(tmp_path: Path) -> None:
    """A written part is ``-z<n>.ndjson.zst``: ``[0, n)`` is a zstd frame of the fact lines
    alone, and the whole object decompresses to exactly the plain part's NDJSON."""
    import zstandard

    from s3spill.usage.recorder import part_body

    store = LocalStore(f"{tmp_path}/s")
    rec = UsageRecorder(store)
    events = [_event(1), _event(2, "read")]
    for event in events:
        rec.record(event)
    rec.close()
    (obj,) = usage_objects(store)
    assert obj.key.endswith(".ndjson.zst") and f"-z{obj.facts}." in obj.key and obj.zstd
    data = store.get(obj.key)
    plain, facts = part_body(events)
    assert obj.facts is not None and obj.facts < len(data) < len(plain) // 10
    assert zstandard.ZstdDecompressor().decompress(data[:obj.facts]) == plain[:facts]
    assert part_lines(data) == plain
    assert [e["shown"] for e in part_events(data)] == [f"1: {TEXT}", f"2: {TEXT}"]


def test_a_one_shot_process_writes_its_event_as_plain_ndjson(tmp_path: Path) -> None:
    """A hook's or a CLI read's one event is a plain ``-f<n>.ndjson`` part (no compression to
    import for a few KB), read like any part."""
    store = LocalStore(f"{tmp_path}/s")
    UsageRecorder(store, batch=False).record(_event(1))
    (obj,) = usage_objects(store)
    assert obj.key.endswith(f"-f{obj.facts}.ndjson") and not obj.zstd
    assert [e["shown"] for e in part_events(store.get(obj.key))] == [f"1: {TEXT}"]
    assert compute_stats(store).events == 1


def test_duckdb_reads_a_zstd_part_as_a_fleet_engine_would(tmp_path: Path) -> None:
    """The documented fleet query over ``*.ndjson.zst`` counts the events (both frames read)."""
    import duckdb

    from s3spill.usage.recorder import zstd_part

    body, _ = zstd_part([_event(i, ("spill", "read")[i % 2]) for i in range(5)])
    path = tmp_path / "20261201T000000Z-0123456789ab-z1.ndjson.zst"
    path.write_bytes(body)
    rows = duckdb.sql(f"SELECT count(*) FILTER (WHERE op IS NOT NULL), count(shown) "  # noqa: S608 - test path
                      f"FROM read_json('{tmp_path}/*.ndjson*', format='newline_delimited')").fetchall()
    assert rows == [(5, 5)]


def test_plain_parts_written_before_zstd_are_still_read_beside_new_ones(tmp_path: Path) -> None:
    """``stats`` (only the fact lines of each, by range) and the web view read a ``-f<n>.ndjson``
    part and a zstd part of the same session and day alike."""
    store = CountingStore(f"{tmp_path}/s")
    old = _plain_part(store, [_event(1), dataclasses.replace(_event(2, "read"), artifact="a1")])
    rec = UsageRecorder(store)
    rec.record(_event(3))
    rec.record(dataclasses.replace(_event(4, "read"), artifact="a3"))
    rec.close()
    objs = {o.key: o for o in usage_objects(store)}
    assert len(objs) == 2 and not objs[old].zstd and objs[old].facts is not None
    assert sum(o.zstd for o in objs.values()) == 1
    store.reads.clear()
    stats = compute_stats(store)
    assert stats.events == 4 and stats.tools[0].reread == 2
    assert sorted(store.reads) == sorted((k, (0, o.facts)) for k, o in objs.items())
    shown = sorted(e["shown"] for e in session_events(store, SHASH))
    assert shown == [f"{i}: {TEXT}" for i in range(1, 5)]


def test_gc_and_purge_see_both_part_names_as_the_sessions_usage() -> None:
    """Both part names parse as the session's usage objects (what GC and purge act on); a
    name that mixes them does not."""
    prefix = keys.usage_prefix(SHASH, DAY)
    for leaf in ("20261201T000000Z-0123456789ab-z77.ndjson.zst", "20261201T000000Z-0123456789ab-f7.ndjson",
                 "20261201T000000Z-0123456789ab.ndjson"):
        parsed = keys.parse_key(prefix + leaf)
        assert parsed.kind == "usage_log" and parsed.session_hash == SHASH
    for leaf in ("20261201T000000Z-0123456789ab-f7.ndjson.zst", "20261201T000000Z-0123456789ab-z7.ndjson",
                 "20261201T000000Z-0123456789ab.ndjson.zst"):
        assert keys.parse_key(prefix + leaf).kind != "usage_log"


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
    zstd = UsageObject.of(ObjectInfo(key=f"{prefix}20261201T000000Z-f12345678901-z9.ndjson.zst", size=10,
                                     etag="e", last_modified=when))
    assert old is not None and old.facts is None and not old.zstd
    assert new is not None and new.facts == 7 and not new.zstd
    assert zstd is not None and zstd.facts == 9 and zstd.zstd


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


def test_a_spills_row_writes_the_bytes_its_event_writes(tmp_path: Path) -> None:
    """The writer's :class:`SpillRow` of every kind of spill result (inline, stored, over the
    shown cap, non-ASCII, masked, degraded, with and without a call id or sizes) encodes to
    exactly the lines its :class:`UsageEvent` encodes to, and gives that event back."""
    from s3spill.spill.spiller import Spiller
    from s3spill.usage.events import SHOWN_CAP, spill_event, spill_row

    spiller = Spiller(LocalStore(f"{tmp_path}/s"), "row-session", journal=None)
    results = [spiller.externalize("a.txt\n", "ls"),
               spiller.externalize("".join(f"line {n} – ok…\n" for n in range(9000)), "build", "toolu_1"),
               spiller.externalize("key AKIAIOSFODNN7EXAMPLE here\n" * 3, "env", "c" * 300)]
    base = results[1]
    results += [base.model_copy(update={"degraded_reason": "store down", "artifact": None, "spilled": False}),
                base.model_copy(update={"masked": {"aws": 2, "jwt": 1}, "call_id": ""}),
                base.model_copy(update={"context_text": "é" * (SHOWN_CAP + 5), "tool": "t" * 300})]
    assert results[2].masked and results[1].artifact is not None
    for result in results:
        for stored, threshold in ((None, None), (1234, 50_000)):
            row = spill_row(SHASH, result, stored_bytes=stored, threshold=threshold, at=1_764_633_600.25)
            event = dataclasses.replace(spill_event(SHASH, result, stored_bytes=stored, threshold=threshold,
                                                    at=1_764_633_600.25), id=row.id)
            assert row.encode() == event.encode() and row.event() == event
            read = ("session", "day", "tool", "shown_bytes", "raw_bytes", "spilled", "stored_bytes", "op",
                    "id")
            assert [getattr(row, k) for k in read] == [getattr(event, k) for k in read]
