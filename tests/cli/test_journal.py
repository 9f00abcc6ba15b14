"""The journal commands: ref publish/remove/list, journal show/verify, reconcile."""

from __future__ import annotations

import json

import pytest

from s3spill import keys
from s3spill.cli import main
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.owner import S3ReferenceOwner
from s3spill.store.base import ObjectStore
from tests.leases.journal_artifacts import SESSION, put_artifact


def run(store: ObjectStore, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["--store", store.url, "--session", SESSION, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_publish_list_show_remove_verify(store: ObjectStore, capsys: pytest.CaptureFixture[str]) -> None:
    """A reference published by hand is listed, shown, removed and the journal verifies."""
    claim, ref = put_artifact(store)
    code, out, _ = run(store, capsys, "ref", "publish", claim.source_id, "--txid", "tx-cli",
                       "--retain-until", "2031-01-01T00:00:00+00:00")
    assert code == 0 and out.startswith("committed tx-cli")
    assert S3ReferenceOwner(store, SESSION).get_reference("tx-cli") == ref  # digest from HEAD
    code, out, _ = run(store, capsys, "ref", "publish", claim.source_id, "--txid", "tx-cli",
                       "--retain-until", "2031-01-01T00:00:00+00:00")
    assert code == 0 and out.startswith("already_committed tx-cli")
    code, out, err = run(store, capsys, "ref", "publish", claim.source_id, "--txid", "tx-cli")
    assert code == 2 and "already names another claim" in err  # same id, another lease: refused
    code, out, _ = run(store, capsys, "ref", "list", "--json")
    [row] = json.loads(out)
    assert (row["transaction_id"], row["state"], row["sha256"]) == ("tx-cli", "COMMITTED", claim.sha256)
    code, out, _ = run(store, capsys, "journal", "show")
    assert f"claim {claim.source_id}  refs=1  until 2031-01-01T00:00:00+00:00" in out
    code, out, _ = run(store, capsys, "journal", "show", "--json")
    assert json.loads(out)["generation"] == 2
    code, out, _ = run(store, capsys, "ref", "remove", "tx-cli")
    assert code == 0 and out.startswith("released tx-cli")
    code, out, _ = run(store, capsys, "journal", "verify")
    assert code == 0 and out.startswith("ok: 3 records")
    code, out, _ = run(store, capsys, "ref", "list")
    assert out.strip() == "no live or pending leases"


def test_publish_refuses_foreign_dangling_and_naive_times(store: ObjectStore,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Another session's artifact, a missing one, or a retain-until without timezone are refused."""
    foreign, _ = put_artifact(store, session_id="not-mine")
    code, _, err = run(store, capsys, "ref", "publish", foreign.source_id)
    assert code == 2 and "SourceIdError" in err
    claim, _ = put_artifact(store)
    sid = keys.SourceId.parse(claim.source_id)
    missing = keys.SourceId(sid.session_hash, keys.new_artifact_name("bash"), sid.sha256_prefix)
    code, _, err = run(store, capsys, "ref", "publish", str(missing))
    assert code == 2 and "DanglingReference" in err
    code, _, err = run(store, capsys, "ref", "publish", claim.source_id, "--retain-until", "2031-01-01")
    assert code == 2 and "timezone" in err


def test_verify_reports_corruption_with_its_reason(store: ObjectStore,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """journal verify exits 5 (corrupt) and names what broke; show refuses the same journal, also 5."""
    claim, _ = put_artifact(store)
    run(store, capsys, "ref", "publish", claim.source_id, "--txid", "tx-1")
    key = keys.manifest_key(keys.session_hash(SESSION))
    doc = json.loads(store.get(key))
    doc["records"][0]["at"] = "1999-01-01T00:00:00Z"
    store.put_if_match(key, json.dumps(doc).encode(), store.head(key).etag)
    code, _, err = run(store, capsys, "journal", "verify")
    assert code == 5 and "[hash_mismatch]" in err and "record 0" in err
    code, _, err = run(store, capsys, "journal", "show")
    assert code == 5 and "JournalCorrupt" in err


def test_reconcile_command(store: ObjectStore, capsys: pytest.CaptureFixture[str]) -> None:
    """reconcile settles what it can (exit 0) and exits 1 while a conflict stays pending."""
    claim, _ = put_artifact(store)
    _, other_ref = put_artifact(store)
    journal = LeaseJournal(store, SESSION)
    journal.prepare(claim, "tx-absent")
    code, out, _ = run(store, capsys, "reconcile")
    assert code == 0 and "tx-absent  aborted  state=ABORTED  reason=sealed_absence" in out
    S3ReferenceOwner(store, SESSION).publish("tx-conflict", other_ref)
    journal.prepare(claim, "tx-conflict")
    code, out, _ = run(store, capsys, "reconcile", "--json")
    assert code == 1 and json.loads(out)[0]["outcome"] == "pending_conflict"
    code, out, _ = run(store, capsys, "reconcile", "--txid", "tx-absent")
    assert code == 0 and "already_aborted" in out
