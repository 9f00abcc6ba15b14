"""Faults around the real moto-backed store: lost answers, 409s, 503 bursts, timeouts.

Each fault hits the journal's own requests (the manifest CAS, its reads, segment
writes); afterwards the history must hold every transition exactly once — no
duplicate record, no lost record — and still verify.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from s3spill import keys
from s3spill.errors import StoreUnavailable
from s3spill.leases.journal import LeaseJournal
from s3spill.store.base import Body, ObjectStore, PutResult
from s3spill.store.s3.store import S3Store
from s3spill.testing import Fault, FaultyStore, drop_response_after_send, inject_http_errors
from tests.leases.journal_artifacts import JCFG, SESSION, put_artifact

MANIFEST = keys.manifest_key(keys.session_hash(SESSION))
SEGMENTS = keys.session_prefix(keys.session_hash(SESSION)) + "journal/segments/"


def history(store: ObjectStore) -> Counter[tuple[str, str]]:
    """Every (transaction, event) in the verified history, counted."""
    fresh = LeaseJournal(store, SESSION, JCFG)
    fresh.verify()
    events: Counter[tuple[str, str]] = Counter()
    fold = fresh.refresh()
    for tx in fold.txs.values():
        events[(tx.transaction_id, "PREPARED")] += 1
        if tx.state in ("COMMITTED", "RELEASED"):
            events[(tx.transaction_id, "COMMITTED")] += 1
        if tx.state in ("RELEASED", "ABORTED"):
            events[(tx.transaction_id, tx.state)] += 1
    assert fold.next_sequence == sum(events.values())  # nothing in the chain but these
    return events


def cycles(journal: LeaseJournal, n: int, prefix: str = "tx") -> Counter[tuple[str, str]]:
    claim, _ = put_artifact(getattr(journal.store, "inner", journal.store))  # not through the faults
    expected: Counter[tuple[str, str]] = Counter()
    for i in range(n):
        txid = f"{prefix}-{i}"
        assert journal.publish_reference(claim, lambda: None, txid).state == "COMMITTED"
        assert journal.remove_reference(txid, lambda: None).state == "RELEASED"
        expected.update({(txid, "PREPARED"): 1, (txid, "COMMITTED"): 1, (txid, "RELEASED"): 1})
    return expected


def test_lost_answer_after_a_successful_cas(server_store: S3Store) -> None:
    """A CAS that landed but whose answer was lost is found on read-back, not applied twice."""
    faulty = FaultyStore(server_store)
    journal = LeaseJournal(faulty, SESSION, JCFG)
    faulty.add(Fault("put_if_absent", "drop_response", times=1, key_prefix=MANIFEST))  # the creation
    faulty.add(Fault("put_if_match", "drop_response", times=6, key_prefix=MANIFEST))
    faulty.add(Fault("put_if_absent", "drop_response", times=2, key_prefix=SEGMENTS))
    expected = cycles(journal, 8)
    assert all(f.times == 0 for f in faulty.faults)  # every fault fired
    assert history(server_store) == expected
    assert journal.stats.ambiguous == 7
    assert LeaseJournal(server_store, SESSION, JCFG).view().generation == journal.stats.writes


def test_conflicts_and_503_bursts_are_retried(server_store: S3Store) -> None:
    """409 conflicts and bursts of unavailability on reads and writes end with one record each."""
    faulty = FaultyStore(server_store)
    journal = LeaseJournal(faulty, SESSION, JCFG)
    faulty.add(Fault("put_if_match", "conflict", times=5, key_prefix=MANIFEST))
    faulty.add(Fault("*", "unavailable", times=6, key_prefix=MANIFEST))
    faulty.add(Fault("head", "unavailable", times=3))
    expected = cycles(journal, 6)
    assert history(server_store) == expected
    assert LeaseJournal(server_store, SESSION, JCFG).view().generation == journal.stats.writes


def test_an_outage_longer_than_the_deadline_is_reported_unknown(server_store: S3Store) -> None:
    """If the store stays down, the call fails with StoreUnavailable and the lease keeps its last state."""
    faulty = FaultyStore(server_store)
    journal = LeaseJournal(faulty, SESSION, JCFG.model_copy(update={"journal_cas_attempts": 4}))
    claim, _ = put_artifact(server_store)
    journal.publish_reference(claim, lambda: None, "tx-1")
    faulty.add(Fault("put_if_match", "drop_response", times=1, key_prefix=MANIFEST))
    faulty.add(Fault("*", "unavailable", times=100, key_prefix=MANIFEST))
    with pytest.raises(StoreUnavailable, match="unknown outcome"):
        journal.release("tx-1")  # written on the state it last saw; the answer and then the store lost
    faulty.faults.clear()
    # the RELEASED write did land before the outage: found, not duplicated
    assert journal.release("tx-1").outcome == "already_released"
    assert journal.remove_reference("tx-1", lambda: None).outcome == "already_released"
    assert history(server_store)[("tx-1", "RELEASED")] == 1


class InterleavingStore(FaultyStore):
    """Loses the answer of the next manifest CAS *and* lets another writer in before the caller
    re-reads, so the lost write is no longer the manifest's latest."""

    other: Any = None

    def put_if_match(self, key: str, body: Body, etag: str, *,
                     metadata: dict[str, str] | None = None,
                     content_type: str = "application/octet-stream") -> PutResult:
        result = self.inner.put_if_match(key, body, etag, metadata=metadata, content_type=content_type)
        if self.other is not None and key == MANIFEST:
            other, self.other = self.other, None
            other()
            raise StoreUnavailable("injected: answer lost, and another writer went next", key=key)
        return result


def test_lost_answer_found_under_a_later_write(server_store: S3Store) -> None:
    """A lost CAS followed by someone else's write is still recognised by its record, not redone."""
    store = InterleavingStore(server_store)
    journal = LeaseJournal(store, SESSION, JCFG)
    other = LeaseJournal(server_store, SESSION, JCFG)
    claim, _ = put_artifact(server_store)
    journal.publish_reference(claim, lambda: None, "tx-1")
    store.other = lambda: other.publish_reference(claim, lambda: None, "tx-2")
    assert journal.remove_reference("tx-1", lambda: None).outcome == "released"
    events = history(server_store)
    assert events[("tx-1", "RELEASED")] == 1 and events[("tx-2", "COMMITTED")] == 1


def test_http_timeouts_503s_and_409s_on_the_wire(server_store: S3Store) -> None:
    """The same guarantees with faults injected into botocore's HTTP requests themselves."""
    journal = LeaseJournal(server_store, SESSION, JCFG)
    client = server_store.client
    faults = [
        drop_response_after_send(client, "PutObject", times=3),   # timeouts after the write landed
        inject_http_errors(client, "PutObject", status=503, times=4),
        inject_http_errors(client, "PutObject", status=409, times=3),
        inject_http_errors(client, "GetObject", status=503, times=3),
        inject_http_errors(client, "HeadObject", status=500, times=2),
    ]
    try:
        expected = cycles(journal, 6)
    finally:
        for f in faults:
            f.remove()
    assert all(f.fired > 0 for f in faults)
    assert history(server_store) == expected
