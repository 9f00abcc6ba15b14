"""Failing open, honestly: when the store fails the turn goes on, and nothing points nowhere."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from s3spill.config import TransferConfig
from s3spill.context.policy import SpillPolicy
from s3spill.spill.spiller import Spiller, SpillResult
from s3spill.store.base import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.store.s3.store import S3Store
from s3spill.testing import EmbeddedS3, Fault, FaultyStore, free_port, inject_http_errors
from tests.spill.outputs import SOURCE_ID, numbered_output, preview_part

SESSION = "session-degraded"
NOT_SAVED = "could NOT be saved"
#: The store's own retry budget is deliberately longer than the Spiller's deadline, so
#: these tests show that the Spiller's deadline, not the store giving up, bounds latency.
SLOW_GIVING_UP = TransferConfig(deadline=30.0, backoff_base=0.05, backoff_max=0.5,
                                connect_timeout=1.0, read_timeout=5.0)
#: Scheduling slack over the deadline: the failure these tests catch is a wait of the
#: store's whole retry budget (30 s and more), not a fraction of a second on a loaded
#: 2-core machine (1.0 s was exceeded by 0.14 s there).
SLACK = 2.0

def _assert_degraded(result: SpillResult, data: bytes, policy: SpillPolicy) -> None:
    text = result.context_text
    assert result.degraded_reason
    assert not result.spilled and result.artifact is None
    assert result.mode in ("degraded", "degraded_hard_cap")
    assert NOT_SAVED in text
    assert SOURCE_ID.search(text) is None and "artifact:" not in text
    assert policy.budget().fits(text)
    assert text.startswith(data[:1000].decode())
    assert preview_part(text).endswith(data[-1000:].decode())
    assert result.total_bytes == len(data)


def _timed(spiller: Spiller, data: bytes | Iterator[bytes]) -> tuple[SpillResult, float]:
    started = time.monotonic()
    result = spiller.externalize(data, "bash", "call-1", exit_code=1)
    return result, time.monotonic() - started


def test_dead_endpoint_degrades_within_the_deadline() -> None:
    """Nothing listens at the endpoint: externalize returns within its deadline, saying so."""
    policy = SpillPolicy(store_deadline=1.0)
    store = S3Store("bucket", "p", config=SLOW_GIVING_UP,
                    endpoint_url=f"http://127.0.0.1:{free_port()}",
                    session=EmbeddedS3().session())
    data = numbered_output(1024 * 1024)
    spiller = Spiller(store, SESSION, policy)
    result, took = _timed(spiller, data)
    _assert_degraded(result, data, policy)
    assert took < spiller.sink.deadline_for(len(data)) + SLACK


def test_every_request_503_degrades_within_the_deadline(server_store: S3Store) -> None:
    """Every S3 request answers 503 SlowDown: bounded latency, no exception, no pointer."""
    policy = SpillPolicy(store_deadline=1.0)
    store = S3Store(server_store.bucket, f"t/{uuid.uuid4().hex}", config=SLOW_GIVING_UP,
                    endpoint_url=server_store.client.meta.endpoint_url,
                    session=EmbeddedS3().session())
    faults = inject_http_errors(store.client, "*", status=503, times=10**9)
    data = numbered_output(1024 * 1024)
    spiller = Spiller(store, SESSION, policy)
    result, took = _timed(spiller, data)
    _assert_degraded(result, data, policy)
    assert faults.fired >= 1
    assert took < spiller.sink.deadline_for(len(data)) + SLACK
    faults.remove()
    assert list(store.list("")) == []


def test_store_failure_after_retries_degrades(local_store: LocalStore) -> None:
    """A store that raises StoreUnavailable on every write: degraded, reason names the failure."""
    policy = SpillPolicy()
    store = FaultyStore(local_store, [Fault("*", "unavailable", times=10**9)])
    data = numbered_output(500_000)
    result = Spiller(store, SESSION, policy).externalize(data, "bash", "c2", exit_code=1)
    _assert_degraded(result, data, policy)
    assert "StoreUnavailable" in (result.degraded_reason or "")


def test_a_late_artifact_is_never_pointed_to(local_store: LocalStore) -> None:
    """A write that lands after the deadline is not named: the result was already degraded."""
    policy = SpillPolicy(store_deadline=0.5)
    store = FaultyStore(local_store, [Fault("put_if_absent", "delay", times=10**9, seconds=1.5)])
    data = numbered_output(300_000)
    spiller = Spiller(store, SESSION, policy)
    result, took = _timed(spiller, data)
    _assert_degraded(result, data, policy)
    assert took < spiller.sink.deadline_for(len(data)) + SLACK
    landed: list[str] = []
    for _ in range(100):  # the abandoned write is still running; let it land
        landed = [info.key for info in local_store.list("") if "/artifacts/" in info.key
                  and not info.key.endswith(".idx")]
        if landed:
            break
        time.sleep(0.1)
    assert landed, "the slow write should have landed late"
    assert all(key.rsplit("/", 1)[-1] not in result.context_text for key in landed)


def test_a_broken_output_stream_is_not_stored(store: ObjectStore) -> None:
    """The tool's stream raises midway: no truncated artifact, a degraded preview, no exception."""
    data = numbered_output(400_000)

    def chunks() -> Iterator[bytes]:
        yield data[:200_000]
        yield data[200_000:300_000]
        raise OSError("pipe broke")

    result = Spiller(store, SESSION).externalize(chunks(), "bash", "c3")
    assert result.degraded_reason and "pipe broke" in result.degraded_reason
    assert result.artifact is None and NOT_SAVED in result.context_text
    assert result.total_bytes == 300_000
    assert [info.key for info in store.list("")] == []


@pytest.mark.parametrize("size", [10, 100_000])
def test_a_broken_stream_of_any_size_never_raises(local_store: LocalStore, size: int) -> None:
    """A stream that fails, short or long, still returns a result naming the failure."""

    data = b"z" * size

    def chunks() -> Iterator[bytes]:
        yield data
        raise ValueError("boom")

    result = Spiller(local_store, SESSION).externalize(chunks(), "bash", "c4")
    assert result.degraded_reason and "boom" in result.degraded_reason
    assert result.total_bytes == size and result.context_text.startswith("z" * min(size, 1000))
