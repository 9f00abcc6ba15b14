"""The shipped test tools: FaultyStore rules and the checksum-mode knob reach botocore."""

from __future__ import annotations

import time

import pytest

from s3spill.config import TransferConfig
from s3spill.errors import ConditionalConflict, NotFound, StoreUnavailable
from s3spill.store.local import LocalStore
from s3spill.store.s3.store import S3Store
from s3spill.testing import Fault, FaultyStore


def test_unavailable_fault_fails_before_the_store_is_touched(local_store: LocalStore) -> None:
    """An `unavailable` rule fails N calls without reaching the store, then lets calls through."""
    faulty = FaultyStore(local_store, [Fault("put_if_absent", "unavailable", times=2)])
    for _ in range(2):
        with pytest.raises(StoreUnavailable):
            faulty.put_if_absent("k/a", b"x")
        with pytest.raises(NotFound):
            local_store.head("k/a")
    faulty.put_if_absent("k/a", b"x")
    assert local_store.get("k/a") == b"x"


def test_drop_response_fault_lands_the_write_and_hides_the_answer(local_store: LocalStore) -> None:
    """A `drop_response` rule lets the write land and then raises StoreUnavailable."""
    faulty = FaultyStore(local_store, [Fault("*", "drop_response", key_prefix="k/")])
    with pytest.raises(StoreUnavailable):
        faulty.put_if_absent("k/b", b"landed")
    assert local_store.get("k/b") == b"landed"
    assert faulty.get("k/b") == b"landed"  # the rule fired once and is spent
    assert [entry[2] for entry in faulty.log] == ["drop_response", "pass"]


def test_conflict_and_delay_faults(local_store: LocalStore) -> None:
    """A `conflict` rule raises ConditionalConflict once; a `delay` rule slows a call that then succeeds."""
    faulty = FaultyStore(local_store)
    faulty.add(Fault("put_if_absent", "conflict"))
    faulty.add(Fault("head", "delay", seconds=0.2))
    with pytest.raises(ConditionalConflict):
        faulty.put_if_absent("k/c", b"x")
    faulty.put_if_absent("k/c", b"x")
    started = time.monotonic()
    assert faulty.head("k/c").size == 1
    assert time.monotonic() - started >= 0.2


@pytest.mark.parametrize("mode", ["when_supported", "when_required"])
def test_checksum_mode_configures_botocore(mode: str) -> None:
    """TransferConfig.checksum_mode sets botocore's request and response checksum behaviour."""
    store = S3Store("bucket", "p", config=TransferConfig(checksum_mode=mode),  # type: ignore[arg-type]
                    endpoint_url="http://127.0.0.1:9")
    config = store.client.meta.config
    assert config.request_checksum_calculation == mode
    assert config.response_checksum_validation == mode
    store.close()
