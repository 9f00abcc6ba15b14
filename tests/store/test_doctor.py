"""`s3spill doctor`: real probes, named gaps, a verdict GC can use, nothing left behind."""

from __future__ import annotations

import json
import uuid

import pytest

from s3spill.cli import main
from s3spill.cli.store_cmds import render
from s3spill.store.capabilities import CapabilityReport
from s3spill.store.local import LocalStore
from s3spill.store.probes import probe_capabilities
from s3spill.store.s3.store import S3Store
from s3spill.testing import EmbeddedS3, strip_request_header
from tests.conftest import TEST_BUCKET, TEST_CONFIG, VERSIONED_BUCKET


def honoured(report: CapabilityReport) -> dict[str, bool | None]:
    return {p.name: p.honoured for p in report.probes}


def test_doctor_on_moto_names_its_gaps(server_store: S3Store) -> None:
    """Against moto the doctor finds conditional writes honoured and names the checksum and batch gaps."""
    report = probe_capabilities(server_store)
    rows = honoured(report)
    assert rows["create_if_absent"] and rows["if_match_put"] and rows["if_match_put_missing"]
    assert rows["conditional_delete"] is True
    assert rows["checksum_rejection"] is False
    assert rows["batch_delete_etag"] is False
    assert rows["multipart_if_none_match"] is True
    assert report.ok and report.gc_delete_mode == "conditional"
    assert report.capabilities().verifies_sha256_on_put is False
    text = render(report)
    assert "SHA-256 checksum rejection" in text and "NO" in text and "verdict: OK" in text
    listed = server_store.client.list_objects_v2(Bucket=TEST_BUCKET, Prefix=server_store.prefix)
    assert listed.get("KeyCount", 0) == 0


def test_doctor_cleans_up_every_version(moto_server: EmbeddedS3) -> None:
    """On a versioned bucket the doctor probes delete-by-version and leaves no version behind."""
    store = moto_server.store(VERSIONED_BUCKET, f"t/{uuid.uuid4().hex}", TEST_CONFIG)
    report = probe_capabilities(store)
    assert honoured(report)["versioned_delete"] is True and honoured(report)["versioning"] is True
    versions = store.client.list_object_versions(Bucket=VERSIONED_BUCKET, Prefix=store.prefix)
    assert not versions.get("Versions") and not versions.get("DeleteMarkers")


def test_doctor_fails_a_store_that_ignores_if_match_on_delete(server_store: S3Store) -> None:
    """A store that drops If-Match on DeleteObject (MinIO's gap) on an unversioned bucket fails GC's check."""
    strip_request_header(server_store.client, "DeleteObject", "If-Match")
    report = probe_capabilities(server_store)
    assert honoured(report)["conditional_delete"] is False
    assert report.gc_delete_mode is None and not report.ok
    assert "GC will refuse" in render(report)


def test_doctor_on_the_local_store(local_store: LocalStore) -> None:
    """The local store honours every guarantee it claims and is fit for GC."""
    report = probe_capabilities(local_store)
    assert report.ok and report.gc_delete_mode == "conditional"
    assert list(local_store.list()) == []


def test_doctor_cli_prints_table_and_json(moto_server: EmbeddedS3, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`s3spill doctor` configured from the AWS environment prints the table, or JSON with --json."""
    for name, value in moto_server.env().items():
        monkeypatch.setenv(name, value)
    url = f"s3://{TEST_BUCKET}/t/{uuid.uuid4().hex}"
    assert main(["--store", url, "doctor"]) == 0
    out = capsys.readouterr().out
    assert "create-if-absent" in out and "verdict: OK" in out
    assert main(["--store", url, "doctor", "--json"]) == 0
    report = CapabilityReport.model_validate(json.loads(capsys.readouterr().out))
    assert report.store_url == url and report.ok
