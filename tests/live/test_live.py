"""Live artifacts: segments and a CAS state, read and grepped while the writer runs."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from s3spill import keys
from s3spill.agent.tools import AgentTools
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import LiveConfig
from s3spill.errors import IntegrityError, InvalidRequest, LiveFenced, SourceIdError
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.live import reader as live_reader
from s3spill.live.finish import cas_state, finish_live
from s3spill.live.segments import load_table, read_state
from s3spill.live.state import LiveTable
from s3spill.live.writer import LiveWriter
from s3spill.store import ObjectStore

SESSION = "live-session"
FAST = LiveConfig(segment_bytes=1024, segment_interval=0.05, heartbeat_interval=0.2,
                  lost_after=1.0)


def _lines(a: int, b: int) -> bytes:
    return b"".join(f"line {i:05d} of the output\n".encode() for i in range(a, b))


def _writer(store: ObjectStore, config: LiveConfig = FAST) -> LiveWriter:
    w = LiveWriter(store, SESSION, "bash", command="make test", config=config)
    w.open()
    return w


def _commit(w: LiveWriter) -> None:
    time.sleep(w.config.segment_interval + 0.01)
    w.tick()


def test_each_read_while_running_sees_more_and_is_verified(store: ObjectStore) -> None:
    """Three committed rounds of output are each visible to read and grep, numbered as in the output."""
    w = _writer(store)
    arts = ArtifactStore(store, session_id=SESSION)
    sid = str(w.live_id)
    seen = []
    for r in range(3):
        w.feed(_lines(r * 100, (r + 1) * 100))
        _commit(w)
        page = live_reader.read_page(arts, sid, offset=r * 100, limit=100)
        seen.append(page.total_lines)
        assert page.lines[0].text == f"line {r * 100:05d} of the output"
        assert page.lines[-1].number == (r + 1) * 100
        text = page.render()
        assert "running, heartbeat" in text and f"since={page.byte_end}" in text
        assert live_reader.grep(arts, sid, f"line {r * 100 + 42:05d}").matches[0].line_number == r * 100 + 43
    assert seen == [100, 200, 300]
    assert b"".join(ln.raw() for ln in live_reader.read_page(arts, sid, limit=300).lines) == _lines(0, 300)


def test_since_reads_only_what_is_new(store: ObjectStore) -> None:
    """A read with the previous footer's since shows only the output committed after it."""
    w = _writer(store)
    arts = ArtifactStore(store, session_id=SESSION)
    sid = str(w.live_id)
    w.feed(_lines(0, 50))
    _commit(w)
    first = live_reader.read_page(arts, sid)
    assert first.live.next_since == len(_lines(0, 50))  # type: ignore[attr-defined]
    w.feed(_lines(50, 60))
    _commit(w)
    new = live_reader.read_page(arts, sid, since=first.live.next_since)  # type: ignore[attr-defined]
    assert [ln.number for ln in new.lines] == list(range(51, 61))
    assert b"".join(ln.raw() for ln in new.lines) == _lines(50, 60)
    nothing = live_reader.read_page(arts, sid, since=new.live.next_since)  # type: ignore[attr-defined]
    assert nothing.lines == () and "still running" in nothing.render()


def test_newest_page_costs_the_same_however_long_the_output(local_store: ObjectStore) -> None:
    """The newest page of 390 segments costs the state and two segments at most; an old line a table more."""
    w = _writer(local_store)
    w.feed(_lines(0, 16_000))  # 400 KB: 390 segments
    _commit(w)
    state = read_state(local_store, w.live_id)[0]
    assert sum(t.count for t in state.tables) + len(state.segments) == state.segments[-1].seq + 1 > 380
    assert len(state.segments) < 2 * FAST.table_segments and len(state.to_bytes()) < 20_000
    metered = MeteredStore(local_store)
    arts = ArtifactStore(metered, session_id=SESSION)
    page = live_reader.read_page(arts, str(w.live_id), offset=15_990)
    assert page.lines[-1].text == "line 15999 of the output"
    assert metered.requests["get"] <= 3, metered.requests
    metered.requests.clear()
    old = live_reader.read_page(arts, str(w.live_id), offset=5_000, limit=3)
    assert [ln.number for ln in old.lines] == [5001, 5002, 5003]
    assert old.lines[0].text == "line 05000 of the output"
    assert metered.requests["get"] <= 4, metered.requests  # state, one table, two segments


def test_a_corrupted_segment_is_an_integrity_error(store: ObjectStore) -> None:
    """A segment whose bytes differ from the digest its state lists is refused, not shown."""
    local_store = store
    w = _writer(local_store)
    w.feed(_lines(0, 10))
    _commit(w)
    state = read_state(local_store, w.live_id)[0]
    seg = state.segments[0]
    key = keys.live_segment_key(state.session_hash, state.name, seg.seq, seg.sha256)
    frame = bytearray(local_store.get(key))
    frame[-3] ^= 0xFF  # a stray object of the same size at the segment's key
    local_store.delete_if_match(key, local_store.head(key).etag)
    local_store.put_if_absent(key, bytes(frame))
    arts = ArtifactStore(local_store, session_id=SESSION)
    with pytest.raises(IntegrityError, match="segment 0"):
        live_reader.read_page(arts, str(w.live_id))


def test_a_live_id_of_another_session_is_refused(local_store: ObjectStore) -> None:
    """The session comes from the harness: another session's live id is a SourceIdError."""
    w = _writer(local_store)
    with pytest.raises(SourceIdError):
        live_reader.read_page(ArtifactStore(local_store, session_id="other"), str(w.live_id))


def test_the_size_cap_keeps_head_and_window_with_exact_counts(local_store: ObjectStore) -> None:
    """Past max_bytes the middle is dropped; the state counts it; reads of it say what is kept."""
    cap = LiveConfig(segment_bytes=1024, segment_interval=60, max_bytes=8192, head_bytes=2048)
    w = _writer(local_store, cap)
    data = _lines(0, 2000)  # 54 KB
    w.feed(data)
    w.tick()
    w._commit()
    state = read_state(local_store, w.live_id)[0]
    assert state.truncated is not None and state.kept_bytes <= 8192
    kept = {s.byte_start for s in state.segments}
    assert 0 in kept and 1024 in kept and state.committed_bytes == len(data) - len(data) % 1024
    assert state.truncated.dropped_bytes == state.committed_bytes - state.kept_bytes
    assert state.truncated.dropped_lines == sum(
        data[s:s + 1024].count(b"\n") for s in range(0, state.committed_bytes, 1024)
        if s not in kept)
    # the dropped segments are gone from the store, not only from the state
    objects = [i for i in local_store.list(keys.live_prefix(state.session_hash, state.name))
               if keys.parse_key(i.key).kind == "live_segment"]
    assert len(objects) == len(state.segments)
    arts = ArtifactStore(local_store, session_id=SESSION)
    with pytest.raises(InvalidRequest, match="dropped by the live size cap"):
        live_reader.read_page(arts, str(w.live_id), offset=1000)
    assert "truncated" in live_reader.read_page(arts, str(w.live_id)).render()
    tail = live_reader.read_page(arts, str(w.live_id), offset=state.line_count - 3)
    assert tail.lines[0].number == state.line_count - 2
    w.close("exited", exit_code=0)
    done = finish_live(local_store, SESSION, w.live_id, config=cap)
    body = b"".join(arts.iter_verified(str(done.final_source_id)))
    assert body.startswith(data[:2048]) and b"were dropped here by the live size cap" in body
    assert body.endswith(data[-(len(data) % 1024 or 1024):])


def test_the_size_cap_drops_whole_tables_and_their_objects(local_store: ObjectStore) -> None:
    """With tables in play the cap drops the oldest table after the head, objects included; reads go on."""
    cap = LiveConfig(segment_bytes=1024, segment_interval=0.05, max_bytes=16_384, head_bytes=2048,
                     table_segments=2)
    w = _writer(local_store, cap)
    data = _lines(0, 4000)  # ~100 KB
    w.feed(data)
    _commit(w)
    state = read_state(local_store, w.live_id)[0]
    assert state.truncated is not None and state.tables and state.kept_bytes <= 16_384
    assert state.truncated.dropped_bytes == state.total_bytes - state.kept_bytes
    listed: set[str] = set()
    todo = list(state.tables)
    while todo:  # every table the state reaches, at any level
        t = todo.pop()
        listed.add(keys.live_table_key(state.session_hash, state.name, t.first_seq, t.last_seq,
                                       t.sha256))
        todo += [c for c in load_table(local_store, state, t) if isinstance(c, LiveTable)]
    stored = {i.key for i in local_store.list(keys.live_prefix(state.session_hash, state.name))
              if keys.parse_key(i.key).kind == "live_table"}
    assert stored == listed
    arts = ArtifactStore(local_store, session_id=SESSION)
    assert live_reader.read_page(arts, str(w.live_id), limit=2).lines[1].text == "line 00001 of the output"
    last = live_reader.read_page(arts, str(w.live_id), offset=state.line_count - 1)
    assert last.lines[0].text == "line 03999 of the output"
    assert live_reader.grep(arts, str(w.live_id), "line 03999").matches[0].line_number == 4000


def test_a_stop_request_is_adopted_by_the_writer(race_store: ObjectStore) -> None:
    """A foreign CAS (stop) makes the writer's write lose; it re-reads, keeps the stop, goes on."""
    w = _writer(race_store)
    cas_state(race_store, w.live_id, lambda s: {"stop_requested": True})
    w.feed(_lines(0, 10))
    _commit(w)
    state = read_state(race_store, w.live_id)[0]
    assert w.stop_requested and state.stop_requested and state.line_count == 10


def test_a_writer_declared_lost_is_fenced(race_store: ObjectStore) -> None:
    """Once a finisher marked the state lost (stale heartbeat), the old writer's next commit is fenced."""
    w = _writer(race_store)
    w.feed(_lines(0, 10))
    _commit(w)
    with pytest.raises(InvalidRequest, match="still running"):
        finish_live(race_store, SESSION, w.live_id, config=FAST)
    later = datetime.now(UTC) + timedelta(seconds=5)
    done = finish_live(race_store, SESSION, w.live_id, config=FAST, now=later)
    assert done.status == "lost" and done.final_source_id
    arts = ArtifactStore(race_store, session_id=SESSION)
    assert b"".join(arts.iter_verified(done.final_source_id)) == _lines(0, 10)
    w.feed(_lines(10, 20))
    with pytest.raises(LiveFenced):
        _commit(w)


def test_a_finished_live_id_reads_its_artifact(store: ObjectStore) -> None:
    """After the finish the live id reads (and greps) the ordinary artifact, and the segments are gone."""
    w = _writer(store)
    w.feed(_lines(0, 30))
    w.close("exited", exit_code=2)
    done = finish_live(store, SESSION, w.live_id, config=FAST)
    arts = ArtifactStore(store, session_id=SESSION)
    page = live_reader.read_page(arts, str(w.live_id), offset=25)
    assert page.source_id == done.final_source_id and page.lines[-1].number == 30
    assert "exited with code 2" in page.render() and "stored as artifact:" in page.render()
    assert live_reader.grep(arts, str(w.live_id), "line 00007").matches[0].line_number == 8
    assert live_reader.read_page(arts, str(w.live_id), since=len(_lines(0, 28))).lines[0].number == 29
    left = [i.key for i in store.list(keys.live_prefix(done.session_hash, done.name))]
    assert left == [keys.live_state_key(done.session_hash, done.name)]


def test_agent_tools_read_a_live_id(local_store: ObjectStore) -> None:
    """read_artifact and grep_artifact (what MCP serves) accept a live id, since included."""
    w = _writer(local_store)
    w.feed(_lines(0, 20))
    _commit(w)
    tools = AgentTools(local_store, SESSION)
    text = tools.read_artifact(str(w.live_id))
    assert "line 00019 of the output" in text and "still running" in text
    out = tools.call(tools.read_name, {"source_id": str(w.live_id), "since": len(_lines(0, 19))})
    assert not out.is_error and "line 00019" in out.text and "line 00018" not in out.text
    assert "    18:" not in tools.grep_artifact(str(w.live_id), "line 0001[89]")
    assert "    19:" in tools.grep_artifact(str(w.live_id), "line 0001[89]")


def test_the_async_tools_read_a_live_id_since(local_store: ObjectStore) -> None:
    """AsyncAgentTools.read_artifact passes since through, so an async harness reads only what is new."""
    import asyncio

    from s3spill.agent.aio import AsyncAgentTools

    w = _writer(local_store)
    w.feed(_lines(0, 20))
    _commit(w)
    text = asyncio.run(AsyncAgentTools(local_store, SESSION).read_artifact(
        str(w.live_id), since=len(_lines(0, 18))))
    assert "line 00018" in text and "line 00017" not in text


def test_gc_never_deletes_live_objects(local_store: ObjectStore) -> None:
    """A GC plan with the shortest TTLs keeps a running output's state and segments (retained_protocol)."""
    w = _writer(local_store)
    w.feed(_lines(0, 100))
    _commit(w)
    policy = CleanupPolicy(dry_run=True, orphan_ttl=timedelta(seconds=1),
                           session_ttl=timedelta(seconds=1), allow_dangerously_short_ttl=True)
    plan = plan_cleanup(local_store, CleanupScope(), policy,
                        now=datetime.now(UTC) + timedelta(days=30))
    assert plan.footer.counts.get("planned_delete", 0) == 0
    assert plan.footer.counts["retained_protocol"] >= 2


def test_spiller_start_runs_a_command_in_the_background(local_store: ObjectStore) -> None:
    """Spiller.start returns at once; the handle reads as it runs, waits for the exit code, and stores it."""
    from s3spill.spill.spiller import Spiller

    with Spiller(local_store, SESSION) as spiller:
        handle = spiller.start(["sh", "-c", "echo one; sleep 0.6; echo two; exit 3"],
                               config=LiveConfig(segment_interval=0.1))
        time.sleep(0.4)
        first = live_reader.read_page(spiller.artifacts, handle.source_id)
        assert [ln.text for ln in first.lines] == ["one"] and handle.status().status == "running"
        final = handle.wait(10)
        assert final is not None and final.status == "exited" and final.exit_code == 3
        body = b"".join(spiller.artifacts.iter_verified(str(final.final_source_id)))
        assert body == b"one\ntwo\n"


def test_spiller_start_drains_a_stream_and_stop_ends_a_command(local_store: ObjectStore) -> None:
    """An iterable is stored as it is drained; stop() ends a command as killed, its output kept."""
    from s3spill.spill.spiller import Spiller

    with Spiller(local_store, SESSION) as spiller:
        done = spiller.start(iter([b"a\n", b"b\n"]), tool="stream").wait(10)
        assert done is not None and done.status == "exited" and done.exit_code is None
        assert b"".join(spiller.artifacts.iter_verified(str(done.final_source_id))) == b"a\nb\n"
        handle = spiller.start(["sh", "-c", "echo started; exec sleep 60"],
                               config=LiveConfig(segment_interval=0.1))
        time.sleep(0.5)
        stopped = handle.stop()
        assert stopped is not None and stopped.status == "killed" and stopped.signal == 15
        assert b"".join(spiller.artifacts.iter_verified(str(stopped.final_source_id))) == b"started\n"


def test_a_quiet_writer_is_not_called_lost_before_three_of_its_heartbeats(local_store: ObjectStore) -> None:
    """A reader with a short lost_after still waits three of the writer's own heartbeat intervals."""
    w = _writer(local_store, LiveConfig(heartbeat_interval=30, lost_after=1))
    state = read_state(local_store, w.live_id)[0]
    assert state.effective_status(state.heartbeat + timedelta(seconds=60), 1) == "running"
    assert state.effective_status(state.heartbeat + timedelta(seconds=91), 1) == "lost"


def test_finish_lost_stores_only_outputs_whose_writer_is_gone(local_store: ObjectStore) -> None:
    """The batch finisher stores what silent writers committed, only past the silence asked for."""
    from s3spill.live.finish import finish_lost

    dead, alive = _writer(local_store), _writer(local_store)
    for w in (dead, alive):
        w.feed(_lines(0, 40))
        _commit(w)
    later = datetime.now(UTC) + timedelta(hours=2)
    soon = datetime.now(UTC) + timedelta(seconds=2)  # past lost_after, not past an hour
    assert finish_lost(local_store, older_than=3600, config=FAST, now=soon) == []
    done = finish_lost(local_store, older_than=3600, config=FAST, now=later)
    assert {str(s.live_id) for s in done} == {str(dead.live_id), str(alive.live_id)}
    arts = ArtifactStore(local_store, session_id=SESSION)
    for s in done:
        assert s.status == "lost"
        assert b"".join(arts.iter_verified(str(s.final_source_id))) == _lines(0, 40)
    assert finish_lost(local_store, older_than=3600, config=FAST, now=later) == []
    kinds = {keys.parse_key(i.key).kind for i in local_store.list(keys.SESSIONS + "/")}
    assert "live_segment" not in kinds


def test_levels_keep_the_state_small_and_every_line_readable(local_store: ObjectStore) -> None:
    """780 tiny segments in tables of 4: the state lists a few dozen spans; a line costs a GET per level."""
    cfg = LiveConfig(segment_bytes=64, segment_interval=60, table_segments=4)
    w = _writer(local_store, cfg)
    data = _lines(0, 2000)
    for i in range(0, len(data), 1000):
        w.feed(data[i:i + 1000])
        w._commit()
    state = read_state(local_store, w.live_id)[0]
    assert len(state.spans) <= 8 * 5 and max(t.level for t in state.tables) >= 3
    metered = MeteredStore(local_store)
    arts = ArtifactStore(metered, session_id=SESSION)
    for offset in (0, 1, 777, 1234, 1990):
        metered.requests.clear()
        page = live_reader.read_page(arts, str(w.live_id), offset=offset, limit=2)
        assert page.lines[0].text == f"line {offset:05d} of the output"
        assert metered.requests["get"] <= 2 + max(t.level for t in state.tables) + 2
    assert live_reader.grep(arts, str(w.live_id), r"line 0\d\d\d7 ").total_matches == 200
    w.close("exited", exit_code=0)
    done = finish_live(local_store, SESSION, w.live_id, config=cfg)
    assert b"".join(arts.iter_verified(str(done.final_source_id))) == data


def test_unknown_outcomes_are_decided_by_reading_back(race_store: ObjectStore) -> None:
    """A state CAS or segment PUT that landed but lost its answer is found landed: not doubled, not lost."""
    from s3spill.testing import Fault, FaultyStore

    faulty = FaultyStore(race_store)
    w = _writer(faulty)  # type: ignore[arg-type]
    faulty.add(Fault("put_if_absent", "drop_response", key_prefix=keys.SESSIONS))
    faulty.add(Fault("put_if_match", "drop_response", key_prefix=keys.SESSIONS))
    w.feed(_lines(0, 30))
    _commit(w)
    faulty.add(Fault("put_if_match", "unavailable", key_prefix=keys.SESSIONS))  # did not land
    w.feed(_lines(30, 60))
    _commit(w)
    state = read_state(race_store, w.live_id)[0]
    assert state.writer == w.writer and state.version == w.state.version
    arts = ArtifactStore(race_store, session_id=SESSION)
    page = live_reader.read_page(arts, str(w.live_id), limit=100)
    assert b"".join(ln.raw() for ln in page.lines) == _lines(0, 60)
    assert [f for f in faulty.faults if f.times > 0] == []


def test_list_artifacts_names_outputs_still_running(local_store: ObjectStore) -> None:
    """A model that lost a live id finds it in list_artifacts until the output is an artifact."""
    w = _writer(local_store)
    w.feed(_lines(0, 5))
    _commit(w)
    tools = AgentTools(local_store, SESSION)
    listed = tools.call(tools.list_name, {})
    assert str(w.live_id) in listed.text and "5 lines so far" in listed.text
    assert listed.structured is not None
    assert [r["source_id"] for r in listed.structured["running"]] == [str(w.live_id)]
    w.close("exited", exit_code=0)
    done = finish_live(local_store, SESSION, w.live_id, config=FAST)
    after = tools.call(tools.list_name, {})
    assert str(w.live_id) not in after.text and str(done.final_source_id) in after.text


def test_growth_after_a_cut_still_leaves_room_for_the_marker(local_store: ObjectStore) -> None:
    """A state grown back to max_bytes after a cut is cut again: the final copy fits with its marker."""
    cap = LiveConfig(segment_bytes=1024, segment_interval=60, max_bytes=8192, head_bytes=2048)
    w = _writer(local_store, cap)
    w.feed(_lines(0, 2000)[:48 * 1024])  # whole segments: the first commit cuts the middle
    w.tick()
    w._commit()
    assert read_state(local_store, w.live_id)[0].kept_bytes == 7168
    w.feed(b"x" * 1023 + b"\n")  # one more segment: 8192 kept, within max_bytes but not with a marker
    w.tick()
    w._commit()
    w.close("exited", exit_code=0)
    done = finish_live(local_store, SESSION, w.live_id, config=cap)
    body = b"".join(ArtifactStore(local_store, session_id=SESSION).iter_verified(str(done.final_source_id)))
    assert b"were dropped here by the live size cap" in body
    assert len(body) <= 8192, len(body)
