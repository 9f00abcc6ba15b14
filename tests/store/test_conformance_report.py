"""The conformance report tells a refused guarantee from a silently ignored one, and notices change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from s3spill.errors import StoreUnavailable, UnsupportedOperation
from tests.conftest import BACKENDS
from tests.store import conformance_report as report


def not_implemented_error() -> ClientError:
    return ClientError({"Error": {"Code": "NotImplemented", "Message": "A header you provided "
                        "implies functionality that is not implemented"},
                        "ResponseMetadata": {"HTTPStatusCode": 501}}, "DeleteObject")


def test_without_an_endpoint_no_backend_is_added() -> None:
    """Unless S3SPILL_CONFORMANCE_ENDPOINT is set, the suite runs on local and moto only."""
    if not report.os.environ.get("S3SPILL_CONFORMANCE_ENDPOINT"):
        assert BACKENDS == ["local", "moto"]
    else:
        assert [getattr(b, "values", (b,))[0] for b in BACKENDS] == ["local", "moto", "endpoint"]


def test_a_condition_that_did_not_hold_is_not_implemented() -> None:
    """A losing request that went through, or a failed state check, means the server ignored it."""
    with pytest.raises(pytest.fail.Exception) as raised, pytest.raises(ValueError):
        pass
    assert report.classify(raised.value)[0] == report.NOT_IMPLEMENTED
    assert report.classify(AssertionError("bytes changed"))[0] == report.NOT_IMPLEMENTED


def test_an_error_answer_is_refused() -> None:
    """A 501 (even wrapped in StoreUnavailable) or UnsupportedOperation counts as refused."""
    try:
        try:
            raise not_implemented_error()
        except ClientError as exc:
            raise StoreUnavailable("delete_if_match failed after 6 attempt(s)") from exc
    except StoreUnavailable as wrapped:
        assert report.classify(wrapped)[0] == report.REFUSED
    assert report.classify(UnsupportedOperation("no conditional delete"))[0] == report.REFUSED
    assert report.classify(ExceptionGroup("hypothesis", [AssertionError("x")]))[0] == (
        report.NOT_IMPLEMENTED)


def test_anything_else_is_an_error() -> None:
    """An unrelated exception is reported as an error, never as a verdict on the server."""
    assert report.classify(ConnectionResetError("reset"))[0] == report.ERROR


def test_doctor_probes_map_to_outcomes() -> None:
    """Doctor rows become honoured / not implemented / n/a / refused, plus the verdict."""
    doctor = {"probes": [
        {"name": "checksum_rejection", "honoured": True, "detail": "refused (BadDigest)"},
        {"name": "batch_delete_etag", "honoured": False, "detail": "deleted anyway"},
        {"name": "versioned_delete", "honoured": False, "detail": "not probed: not versioned"},
        {"name": "multipart_if_match", "honoured": None, "detail": "could not probe: NotImplemented"},
        {"name": "create_if_absent", "honoured": True, "detail": "measured by the suite"},
    ]}
    found = report.doctor_outcomes(doctor, 1)
    assert {k: v[0] for k, v in found.items()} == {
        "doctor:checksum_rejection": report.HONOURED,
        "doctor:batch_delete_etag": report.NOT_IMPLEMENTED,
        "doctor:versioned_delete": report.NOT_APPLICABLE,
        "doctor:multipart_if_match": report.REFUSED,
        "doctor:verdict": "MISSING (exit 1)",
    }


def test_check_fails_when_a_server_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """check passes on the recorded outcomes and fails, naming the row, when one differs."""
    monkeypatch.setattr(report, "EXPECTED_FILE", tmp_path / "expected.json")
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"results": [
        {"test": "test_create_once", "outcome": report.HONOURED, "detail": ""}]}))
    doctor = tmp_path / "doctor.json"
    doctor.write_text(json.dumps({"probes": []}))
    args = ["check", "srv", "--report", str(run), "--doctor", str(doctor), "--doctor-exit", "0"]
    assert report.main(args) == 1  # nothing recorded yet
    assert report.main([*args, "--update"]) == 0
    assert report.main(args) == 0
    run.write_text(json.dumps({"results": [
        {"test": "test_create_once", "outcome": report.NOT_IMPLEMENTED, "detail": "DID NOT RAISE"}]}))
    assert report.main(args) == 1
    assert "srv differs from what was measured before: test_create_once" in capsys.readouterr().err
