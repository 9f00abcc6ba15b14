"""The recorder: batched off the caller's path, one object per call when one-shot, fail open."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime

import pytest

from s3spill import keys
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import Fault, FaultyStore
from s3spill.usage.events import UsageEvent
from s3spill.usage.recorder import UsageRecorder
from s3spill.usage.source import part_events, usage_objects
from tests.usage.conftest import SESSION


def _event(i: int, session: str = SESSION) -> UsageEvent:
    return UsageEvent(session=keys.session_hash(session), op="spill", tool="ls", shown=f"out {i}",
                      shown_chars=5, shown_bytes=5, id=f"{i:016x}", ts="2026-12-01T00:00:00.000Z")


def test_a_batch_is_one_object_per_max_events_written_on_its_own_thread(store: ObjectStore) -> None:
    """1,000 events with max_events=100: ten objects, none written on the caller's thread."""
    writers: set[str] = set()
    real = store.put_if_absent

    def spy(*args: object, **kwargs: object) -> object:
        writers.add(threading.current_thread().name)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    store.put_if_absent = spy  # type: ignore[method-assign]
    # A flush takes whatever is queued when it starts (often more than 100 while moto is slow
    # to answer), so the last few events wait for max_age: 2 s, not a minute of the suite.
    rec = UsageRecorder(store, max_events=100, max_age=2.0)
    for i in range(1000):
        rec.record(_event(i))
    deadline = time.monotonic() + 60
    while rec.written < 1000 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert writers == {"s3spill-usage"}
    rec.close()
    assert rec.written == 1000 and rec.objects <= 10 + 1 and rec.lost == 0
    lines = sum(len(part_events(store.get(o.key))) for o in usage_objects(store))
    assert lines == 1000


def test_the_oldest_event_waits_at_most_max_age(tmp_path: object) -> None:
    """A quiet process still writes its few events within max_age, without a flush."""
    store = LocalStore(f"{tmp_path}/s")
    rec = UsageRecorder(store, max_events=1000, max_age=0.2)
    rec.record(_event(1))
    deadline = time.monotonic() + 5
    while rec.written == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert rec.written == 1 and rec.objects == 1
    rec.close()


def test_one_shot_writes_one_small_object_per_call(store: ObjectStore) -> None:
    """``batch=False`` (hooks, the CLI): each call's event is its own object, written at once."""
    rec = UsageRecorder(store, batch=False)
    spiller = Spiller(store, SESSION, usage=rec)
    for _ in range(3):
        spiller.externalize("x" * 10, "ls")
    assert rec.objects == 3 and len(list(usage_objects(store))) == 3


def test_a_failing_store_loses_usage_never_the_tool_call(tmp_path: object) -> None:
    """Every usage write fails: the spill still returns its pointer, the loss is counted."""
    inner = LocalStore(f"{tmp_path}/s")
    faulty = FaultyStore(inner)
    faulty.add(Fault("put_if_absent", "unavailable", times=100, key_prefix=keys.SESSIONS + "/"
                     + keys.session_hash(SESSION) + "/usage/"))
    rec = UsageRecorder(faulty, batch=False)
    spiller = Spiller(faulty, SESSION, usage=rec)
    result = spiller.externalize("line\n" * 100_000, "build")
    assert result.spilled and result.artifact is not None
    assert rec.lost == 1 and rec.written == 0
    assert list(usage_objects(inner)) == []


def test_a_full_queue_drops_and_counts(tmp_path: object) -> None:
    """The queue is bounded: past max_queued, events are dropped (counted), never blocking."""
    rec = UsageRecorder(LocalStore(f"{tmp_path}/s"), max_events=10**6, max_age=60.0, max_queued=5)
    for i in range(8):
        rec.record(_event(i))
    assert rec.pending == 5 and rec.dropped == 3
    rec.close()
    assert rec.written == 5


def test_a_write_after_a_purge_seal_is_undone(tmp_path: object) -> None:
    """A batch that lands after the purge sealed the session is deleted again, the rest dropped."""
    store = LocalStore(f"{tmp_path}/s")
    store.put_if_absent(keys.erasure_key(keys.session_hash(SESSION)), b"{}")
    rec = UsageRecorder(store, batch=False)
    rec.record(_event(1))
    rec.record(_event(2))
    assert list(usage_objects(store)) == [] and rec.dropped == 1


def test_a_live_read_is_recorded_with_what_it_showed(tmp_path: object) -> None:
    """Reading a running command's output by its live: id makes a ``live_read`` event."""
    import sys

    from s3spill.agent.tools import AgentTools
    from s3spill.config import LiveConfig

    store = LocalStore(f"{tmp_path}/s")
    rec = UsageRecorder(store, batch=False)
    handle = Spiller(store, SESSION, usage=rec).start(
        [sys.executable, "-c", "print('hello live')"], "bash", config=LiveConfig(segment_interval=0.1))
    handle.wait(30)
    tools = AgentTools(store, SESSION, usage=rec)
    outcome = tools.call(tools.read_name, {"source_id": handle.source_id})
    assert not outcome.is_error and "hello live" in outcome.text
    bodies = [store.get(o.key) for o in usage_objects(store)]
    events = [e for b in bodies for e in part_events(b)]
    assert any(e["op"] == "live_read" and "hello live" in e["shown"] for e in events)


def test_a_spills_event_is_built_on_the_writers_thread_with_the_calls_time(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller only queues a maker; the writer builds the event, stamped when the call ran."""
    store = LocalStore(f"{tmp_path}/s")
    rec = UsageRecorder(store, max_events=1000, max_age=60.0, build_every=0.05)
    spiller = Spiller(store, SESSION, usage=rec, journal=None)
    threads: list[str] = []
    monkeypatch.setattr(Spiller, "_event", _on_thread(Spiller._event, threads))
    before = time.time()
    spiller.externalize("a.txt\n", "ls")
    assert threads == []  # nothing built on the caller's path
    deadline = time.monotonic() + 10
    while not threads and time.monotonic() < deadline:  # built (and counted) soon, written later
        time.sleep(0.01)
    assert threads == ["s3spill-usage"] and rec.objects == 0
    rec.close()
    (event,) = [e for o in usage_objects(store) for e in part_events(store.get(o.key))]
    assert event["op"] == "spill" and event["tool"] == "ls"
    stamp = datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()
    assert before - 0.001 <= stamp <= before + 1.0


def test_a_maker_that_fails_loses_only_its_own_event(tmp_path: object) -> None:
    """A deferred event whose building raises is counted lost; the others are written."""
    store = LocalStore(f"{tmp_path}/s")
    rec = UsageRecorder(store, max_events=1000, max_age=60.0)
    rec.defer(lambda: 1 // 0)  # type: ignore[arg-type, return-value]
    rec.defer(lambda: _event(1))
    rec.close()
    assert rec.lost == 1 and rec.written == 1


def _on_thread(make: Callable[..., UsageEvent], names: list[str]) -> Callable[..., UsageEvent]:
    def wrapped(*args: object) -> UsageEvent:
        names.append(threading.current_thread().name)
        return make(*args)
    return wrapped


def test_an_event_deferred_in_the_instant_close_flushes_is_still_written(tmp_path: object) -> None:
    """``close()`` running between ``defer``'s checks and its append (another thread's exit)
    cannot lose the event: it is written after all, on the caller's thread."""
    from collections import deque

    store = LocalStore(f"{tmp_path}/s")
    rec = UsageRecorder(store, max_events=1000, max_age=60.0)

    class CloseFirst(deque):  # type: ignore[type-arg]
        def append(self, item: object) -> None:
            rec.close()  # the closing thread wins the race: it flushes an empty queue
            super().append(item)

    rec._made = CloseFirst()  # type: ignore[assignment]
    rec.defer(lambda: _event(1))
    assert rec.written == 1 and rec.objects == 1 and rec.pending == 0
    assert len(list(usage_objects(store))) == 1


def test_an_event_that_cannot_be_encoded_is_lost_alone(tmp_path: object) -> None:
    """A shown text with a lone surrogate (no UTF-8 form) loses its own event, counted; the
    writer goes on and writes the others."""
    store = LocalStore(f"{tmp_path}/s")
    rec = UsageRecorder(store, max_events=1000, max_age=60.0)
    bad = _event(2)
    bad.shown = "half a pair: \udc80"
    rec.defer(_event, 1)
    rec.defer(lambda: bad)
    rec.record(bad)
    rec.close()
    assert rec.lost == 2 and rec.written == 1
