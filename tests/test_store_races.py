"""Create-if-absent races: 16 writers, threads and separate processes, on S3 and locally.

S3 races run against the serialized moto server, so the only atomicity under test is
the store's conditional request, not luck in the emulator's threading.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable

import pytest

from s3spill.errors import AlreadyExists
from s3spill.store import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.store.s3 import S3Store
from s3spill.testing import EmbeddedS3, child_env
from tests.conftest import TEST_BUCKET

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
        finally:
            store.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return outcomes


CHILD = r"""
import sys
from s3spill.errors import AlreadyExists
from s3spill.store import open_store
url, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
body = (f"writer-{n:02d}|".encode()) * 4096
store = open_store(url)
print("ready", flush=True)
sys.stdin.readline()
try:
    store.put_if_absent(key, body)
    print("won", flush=True)
except AlreadyExists:
    print("AlreadyExists", flush=True)
except Exception as exc:
    print(repr(exc), flush=True)
"""


def race_processes(url: str, key: str, env: dict[str, str]) -> dict[int, str]:
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD, url, key, str(n)], env=child_env(env),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for n in range(WRITERS)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs:  # release them all at once
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outcomes = {}
        for n, proc in enumerate(procs):
            out, _ = proc.communicate(timeout=120)
            outcomes[n] = out.strip()
        return outcomes
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_threads_race_on_s3(moto_server: EmbeddedS3, server_store: S3Store) -> None:
    """16 threads creating one key on S3: exactly one wins, the rest get AlreadyExists."""
    outcomes = race_threads(
        lambda: moto_server.store(TEST_BUCKET, server_store.prefix, server_store.config), "race/t")
    check_one_winner(server_store, "race/t", outcomes)


def test_threads_race_locally(local_store: LocalStore) -> None:
    """16 threads creating one key locally: exactly one wins, the rest get AlreadyExists."""
    outcomes = race_threads(lambda: LocalStore(local_store.root), "race/t")
    check_one_winner(local_store, "race/t", outcomes)


@pytest.mark.slow
def test_processes_race_on_s3(moto_server: EmbeddedS3, server_store: S3Store) -> None:
    """16 processes creating one key on S3 (configured from the AWS environment): one wins."""
    outcomes = race_processes(server_store.url, "race/p", moto_server.env())
    check_one_winner(server_store, "race/p", outcomes)


@pytest.mark.slow
def test_processes_race_locally(local_store: LocalStore) -> None:
    """16 processes creating one key in a local store: exactly one wins."""
    outcomes = race_processes(local_store.url, "race/p", {})
    check_one_winner(local_store, "race/p", outcomes)
