"""Create-if-absent races: 16 writers, threads and separate processes, on S3 and locally.

S3 races run against the serialized moto server, so the only atomicity under test is
the store's conditional request, not luck in the emulator's threading; with
``S3SPILL_CONFORMANCE_ENDPOINT`` set they run against that server too.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from s3spill.errors import AlreadyExists
from s3spill.store import ObjectStore, open_store
from s3spill.store.local import LocalStore
from s3spill.store.s3.store import S3Store

WRITERS = 16


def body_of(writer: int) -> bytes:
    return (f"writer-{writer:02d}|".encode()) * 4096


def check_one_winner(store: ObjectStore, key: str, outcomes: dict[int, str]) -> None:
    winners = [w for w, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == WRITERS
    assert len(winners) == 1, outcomes
    assert all(outcome in ("won", "AlreadyExists") for outcome in outcomes.values()), outcomes
    assert store.get(key) == body_of(winners[0])


def race_threads(make_store: Callable[[], ObjectStore], key: str) -> dict[int, str]:
    barrier = threading.Barrier(WRITERS)
    outcomes: dict[int, str] = {}

    def writer(n: int) -> None:
        store = make_store()
        barrier.wait()
        try:
            store.put_if_absent(key, body_of(n))
            outcomes[n] = "won"
        except AlreadyExists:
            outcomes[n] = "AlreadyExists"
        except Exception as exc:
            outcomes[n] = repr(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return outcomes


def _child(url: str, key: str, n: int, env: dict[str, str], ready: Any, go: Any,
           results: Any) -> None:
    """One forked writer: its own store and connections, released by the shared event."""
    os.environ.update(env)
    store = open_store(url)
    ready.release()
    go.wait(60)
    try:
        store.put_if_absent(key, body_of(n))
        results.put((n, "won"))
    except AlreadyExists:
        results.put((n, "AlreadyExists"))
    except Exception as exc:
        results.put((n, repr(exc)))


def race_processes(url: str, key: str, env: dict[str, str]) -> dict[int, str]:
    """Fork (no re-import, so the race starts in well under a second) 16 real processes."""
    ctx = multiprocessing.get_context("fork")
    ready, go, results = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(url, key, n, env, ready, go, results))
             for n in range(WRITERS)]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            assert ready.acquire(timeout=60)
        go.set()
        outcomes = dict(results.get(timeout=120) for _ in procs)
        for proc in procs:
            proc.join(timeout=30)
        assert all(proc.exitcode == 0 for proc in procs)
        return outcomes
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join()


def test_threads_race_on_s3(http_s3_store: S3Store) -> None:
    """16 threads sharing one S3 store create one key: exactly one wins, the rest get AlreadyExists."""
    outcomes = race_threads(lambda: http_s3_store, "race/t")
    check_one_winner(http_s3_store, "race/t", outcomes)


def test_threads_race_locally(local_store: LocalStore) -> None:
    """16 threads creating one key locally: exactly one wins, the rest get AlreadyExists."""
    outcomes = race_threads(lambda: LocalStore(local_store.root), "race/t")
    check_one_winner(local_store, "race/t", outcomes)


@pytest.mark.slow
def test_processes_race_on_s3(http_s3_store: S3Store, http_s3_env: dict[str, str]) -> None:
    """16 processes creating one key on S3 (configured from the AWS environment): one wins."""
    outcomes = race_processes(http_s3_store.url, "race/p", http_s3_env)
    check_one_winner(http_s3_store, "race/p", outcomes)


@pytest.mark.slow
def test_processes_race_locally(local_store: LocalStore) -> None:
    """16 processes creating one key in a local store: exactly one wins."""
    outcomes = race_processes(local_store.url, "race/p", {})
    check_one_winner(local_store, "race/p", outcomes)
