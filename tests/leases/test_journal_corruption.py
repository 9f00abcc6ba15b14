"""A damaged journal is refused loudly, with a reason code and a message saying what broke."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from s3spill import keys
from s3spill.errors import JournalCorrupt
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.journal_format import compute_record_hash, intent_hash
from s3spill.store.base import ObjectStore
from tests.leases.journal_artifacts import JCFG, SESSION, put_artifact

SHASH = keys.session_hash(SESSION)
MANIFEST = keys.manifest_key(SHASH)


def populated(store: ObjectStore, transactions: int = 3) -> LeaseJournal:
    j = LeaseJournal(store, SESSION, JCFG)
    claim, _ = put_artifact(store)
    for n in range(transactions):
        j.publish_reference(claim, lambda: None, f"tx-{n}")
    return j


def rewrite_manifest(store: ObjectStore, edit: Callable[[dict[str, Any]], None]) -> None:
    info = store.head(MANIFEST)
    doc = json.loads(store.get(MANIFEST))
    edit(doc)
    store.put_if_match(MANIFEST, json.dumps(doc).encode(), info.etag)


def rechain(records: list[dict[str, Any]], start: int, doc: dict[str, Any]) -> None:
    """What a careful forger does: re-hash from ``start`` on and fix the links and the head."""
    for i in range(start, len(records)):
        if i > 0:
            records[i]["prev_hash"] = records[i - 1]["record_hash"]
        records[i]["record_hash"] = compute_record_hash(records[i])
    doc["head_hash"] = records[-1]["record_hash"]


def refused(store: ObjectStore, reason: str, match: str) -> None:
    """verify, recovery by a fresh process, and writes all refuse with the same reason."""
    with pytest.raises(JournalCorrupt, match=match) as exc:
        LeaseJournal(store, SESSION, JCFG).verify()
    assert exc.value.reason == reason
    assert exc.value.session_hash == SHASH
    with pytest.raises(JournalCorrupt):
        LeaseJournal(store, SESSION, JCFG).recover()
    with pytest.raises(JournalCorrupt):
        LeaseJournal(store, config=JCFG, session_hash=SHASH).commit("tx-0")


def test_an_altered_record_fails_its_hash(store: ObjectStore) -> None:
    """Editing any field of a stored record breaks its SHA-256."""
    populated(store)
    rewrite_manifest(store, lambda d: d["records"][1].update(at="2000-01-01T00:00:00Z"))
    refused(store, "hash_mismatch", "record 1: content does not match its SHA-256")


def test_a_dropped_record_is_a_sequence_gap(store: ObjectStore) -> None:
    """Removing a record from the middle of the history is reported as a sequence gap."""
    populated(store)
    rewrite_manifest(store, lambda d: d["records"].pop(2))
    refused(store, "sequence_gap", "expected sequence 2, found 3")


def test_a_foreign_record_is_refused(store: ObjectStore) -> None:
    """A record that names another session is refused even with a valid hash chain."""
    populated(store)

    def edit(doc: dict[str, Any]) -> None:
        doc["records"][3]["session_hash"] = keys.session_hash("intruder")
        rechain(doc["records"], 3, doc)

    rewrite_manifest(store, edit)
    refused(store, "foreign_record", "record 3 belongs to another session")


def test_an_edited_intent_is_refused(store: ObjectStore) -> None:
    """Rewriting a claim, even with hashes and links recomputed, is caught as a rewritten intent."""
    populated(store)

    def edit(doc: dict[str, Any]) -> None:
        prepared = doc["records"][0]
        prepared["claim"]["reference_count"] = 99
        prepared["intent_sha256"] = intent_hash(prepared["claim"])
        rechain(doc["records"], 0, doc)

    rewrite_manifest(store, edit)
    refused(store, "rewritten_intent", "COMMITTED of tx-0 carries another intent")


def test_an_intent_edited_in_place_fails_the_hash(store: ObjectStore) -> None:
    """Changing a PREPARED claim without touching anything else breaks that record's hash."""
    populated(store)
    rewrite_manifest(store, lambda d: d["records"][0]["claim"].update(reference_count=7))
    refused(store, "hash_mismatch", "record 0")


def test_an_edited_pending_set_is_refused(store: ObjectStore) -> None:
    """A pending set that disagrees with the history (e.g. a committed claim listed as pending) is refused."""
    populated(store)
    rewrite_manifest(store, lambda d: d["pending_transaction_ids"].append("tx-1"))
    refused(store, "view_mismatch", "pending transaction ids disagree with its history")


def test_unparseable_manifest_and_records_are_refused(store: ObjectStore) -> None:
    """A manifest that is not JSON, or a record of an unknown kind, is refused as unparseable."""
    populated(store)

    def edit(doc: dict[str, Any]) -> None:
        doc["records"][-1]["event"] = "FORGOTTEN"
        rechain(doc["records"], len(doc["records"]) - 1, doc)

    rewrite_manifest(store, edit)
    refused(store, "unparseable", "is not a valid record")
    info = store.head(MANIFEST)
    store.put_if_match(MANIFEST, b"{not json", info.etag)
    refused(store, "unparseable", "the manifest is not a valid manifest")


def test_missing_or_altered_segments_are_refused(store: ObjectStore) -> None:
    """A referenced segment that is gone, or whose bytes changed, fails recovery."""
    populated(store, transactions=10)
    doc = json.loads(store.get(MANIFEST))
    ref = doc["segments"][0]
    key = keys.segment_key(SHASH, ref["first_sequence"], ref["last_sequence"], ref["sha256"])
    body = store.get(key)
    store.delete_if_match(key, store.head(key).etag)
    refused(store, "segment_missing", "segment 0-7 referenced by the manifest is missing")
    store.put_if_absent(key, body.replace(b'"sequence":3', b'"sequence":4'))
    refused(store, "segment_mismatch", "segment 0-7 does not match the digest")


def test_orphan_segments_are_reported_and_ignored(store: ObjectStore) -> None:
    """Segments the manifest does not reference never change the view; verify lists them."""
    j = populated(store, transactions=10)
    view = j.view()
    doc = json.loads(store.get(MANIFEST))
    ref = doc["segments"][0]
    body = store.get(keys.segment_key(SHASH, ref["first_sequence"], ref["last_sequence"], ref["sha256"]))
    # a lost compaction race over a different range: same records, another key
    seg = json.loads(body)
    seg["records"] = seg["records"][:5]
    seg["last_sequence"] = 4
    lost = json.dumps(seg, sort_keys=True, separators=(",", ":")).encode()
    store.put_if_absent(keys.segment_key(SHASH, 0, 4, hashlib.sha256(lost).hexdigest()), lost)
    # junk claiming the same range as the real segment, with conflicting content
    store.put_if_absent(keys.segment_key(SHASH, 0, 7, "f" * 64), body.replace(b"tx-1", b"tx-X"))
    fresh = LeaseJournal(store, SESSION, JCFG)
    report = fresh.verify()
    statuses = sorted((o.first_sequence, o.last_sequence, o.status) for o in report.orphan_segments)
    assert statuses == [(0, 4, "consistent"), (0, 7, "conflicting")]
    assert fresh.view() == view


def test_a_manifest_going_back_in_time_is_refused(store: ObjectStore) -> None:
    """A process that verified generation N refuses a manifest that later shows an older one."""
    j = populated(store)
    old = store.get(MANIFEST)
    claim, _ = put_artifact(store)
    j.publish_reference(claim, lambda: None, "tx-new")
    info = store.head(MANIFEST)
    store.put_if_match(MANIFEST, old, info.etag)
    with pytest.raises(JournalCorrupt, match="went back from generation") as exc:
        j.view()
    assert exc.value.reason == "generation"


def test_an_edited_segment_with_a_matching_digest_is_still_caught(store: ObjectStore) -> None:
    """Rewriting a record inside a segment and re-pointing the manifest at the new bytes is
    caught by the record's own hash, and the message names the record."""
    populated(store, transactions=10)
    doc = json.loads(store.get(MANIFEST))
    ref = doc["segments"][0]
    seg = json.loads(store.get(keys.segment_key(SHASH, ref["first_sequence"], ref["last_sequence"],
                                                ref["sha256"])))
    seg["records"][5]["event"] = "FORGOTTEN"
    body = json.dumps(seg, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(body).hexdigest()
    store.put_if_absent(keys.segment_key(SHASH, ref["first_sequence"], ref["last_sequence"], digest), body)
    rewrite_manifest(store, lambda d: d["segments"][0].update(sha256=digest))
    refused(store, "hash_mismatch", "segment 0-7: record 5: content does not match its SHA-256")


@pytest.mark.parametrize("junk", ["x", 5, None, [1, 2]])
def test_a_segment_record_that_is_not_an_object_is_refused_as_unparseable(store: ObjectStore,
                                                                         junk: object) -> None:
    """A segment whose records list holds something else than a JSON object is corrupt (it raised
    AttributeError, which no caller expects: a GC plan stopped instead of retaining the session)."""
    populated(store, transactions=10)
    doc = json.loads(store.get(MANIFEST))
    ref = doc["segments"][0]
    seg = json.loads(store.get(keys.segment_key(SHASH, ref["first_sequence"], ref["last_sequence"],
                                                ref["sha256"])))
    seg["records"][5] = junk
    body = json.dumps(seg, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(body).hexdigest()
    store.put_if_absent(keys.segment_key(SHASH, ref["first_sequence"], ref["last_sequence"], digest), body)
    rewrite_manifest(store, lambda d: d["segments"][0].update(sha256=digest))
    refused(store, "unparseable", "segment 0-7: a record is not a JSON object")
