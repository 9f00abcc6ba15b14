"""The conditional-write gate: one probe per store and process, shared by wrappers that forward conditions."""

from __future__ import annotations

import pytest

from s3spill.errors import StoreCapabilityError
from s3spill.gc.metered_store import MeteredStore
from s3spill.store.conditional_writes import require_conditional_writes
from s3spill.store.s3.store import S3Store
from s3spill.testing import ConditionIgnoringStore, FaultyStore, record_operations


def test_wrappers_that_forward_conditions_share_one_verdict(server_store: S3Store) -> None:
    """The first check probes the real store; checks through other forwarding wrappers send no request."""
    seen = record_operations(server_store.client)
    faulty = FaultyStore(server_store)
    require_conditional_writes(faulty, purpose="the test")
    probed = len(seen)
    assert "PutObject" in seen and faulty.log == []  # probed the inner store, no fault spent
    require_conditional_writes(MeteredStore(server_store), purpose="the test")
    require_conditional_writes(server_store, purpose="the test")
    assert len(seen) == probed


def test_a_wrapper_that_changes_conditions_is_probed_itself(server_store: S3Store) -> None:
    """A store that ignores conditions is refused even when the store it wraps already passed."""
    require_conditional_writes(server_store, purpose="the test")
    weak = ConditionIgnoringStore(server_store)
    assert weak.conditions_source() is weak
    with pytest.raises(StoreCapabilityError) as caught:
        require_conditional_writes(FaultyStore(weak), purpose="the journal")
    assert "the journal refuses" in str(caught.value) and "honoured" in caught.value.table
    seen = record_operations(server_store.client)
    with pytest.raises(StoreCapabilityError):
        require_conditional_writes(weak, purpose="the journal")
    assert seen == []  # the refusal is remembered as well
