"""The spill/read/grep commands: thin, session-bound, and silent on stdout when integrity fails."""

from __future__ import annotations

import io
import json

import pytest

from s3spill import keys
from s3spill.cli import main
from s3spill.store import ObjectStore
from tests.artifacts.inspect_store import overwrite

DATA = b"".join(
    b"%05d %s\n" % (i, b"ERROR disk full" if i % 1000 == 0 else b"ok") for i in range(20_000)
)


def _run(
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
    store: ObjectStore,
    *argv: str,
    stdin: bytes = b"",
) -> tuple[int, bytes, str]:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(["--store", store.url, *argv])
    out, err = capsysbinary.readouterr()
    return code, out, err.decode()


def test_spill_read_grep_round_trip(
    store: ObjectStore, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """stdin is stored unconditionally; read and grep find it again by the printed source id."""
    monkeypatch.setenv("S3SPILL_SESSION", "cli-session")
    code, out, _ = _run(
        capsysbinary, monkeypatch, store, "spill", "--tool", "make", "--json", stdin=DATA
    )
    ref = json.loads(out)
    assert code == 0 and ref["size_bytes"] == len(DATA) and ref["tool"] == "make"
    sid = ref["source_id"]
    code, out, _ = _run(capsysbinary, monkeypatch, store, "read", sid, "--offset", "19998")
    assert (
        code == 0 and b"19999\t19998 ok\n" in out and b"[EOF: line 20000 is the last line]" in out
    )
    code, out, _ = _run(
        capsysbinary, monkeypatch, store, "grep", sid, "ERROR", "--max-matches", "3"
    )
    assert code == 0 and b"[3 of 20 matching lines shown; 17 more omitted" in out
    code, out, _ = _run(capsysbinary, monkeypatch, store, "grep", sid, "nothing-like-this")
    assert code == 1 and b"[no matching lines]" in out
    code, out, _ = _run(capsysbinary, monkeypatch, store, "spill", stdin=b"")
    assert code == 0 and out.startswith(b"artifact:")


def test_session_flag_binds_reads(
    store: ObjectStore, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An id spilled in one session is refused under another, with one line and exit status 2."""
    monkeypatch.delenv("S3SPILL_SESSION", raising=False)
    _, out, _ = _run(capsysbinary, monkeypatch, store, "--session", "A", "spill", stdin=DATA)
    sid = out.splitlines()[0].decode()
    code, out, err = _run(capsysbinary, monkeypatch, store, "--session", "B", "read", sid)
    assert code == 2 and out == b"" and "SourceIdError" in err and err.count("\n") == 1
    code, out, err = _run(capsysbinary, monkeypatch, store, "read", sid)  # this directory's session
    assert code == 2 and out == b"" and "SourceIdError" in err


def test_integrity_failure_prints_nothing_unverified(
    store: ObjectStore, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After tampering, read and grep print nothing to stdout, exit 5 and name the source id on stderr."""
    monkeypatch.setenv("S3SPILL_SESSION", "S")
    _, out, _ = _run(capsysbinary, monkeypatch, store, "spill", stdin=DATA)
    sid = out.splitlines()[0].decode()
    parsed = keys.SourceId.parse(sid)
    akey = keys.artifact_key(parsed.session_hash, parsed.name)
    meta = dict(store.head(akey).metadata)
    overwrite(store, akey, DATA.replace(b"19000 ERROR", b"19000 HIDDEN"), meta)
    for argv in (["read", sid, "--offset", "18990"], ["grep", sid, "ERROR"]):
        code, out, err = _run(capsysbinary, monkeypatch, store, *argv)
        assert code == 5 and out == b"", argv
        assert (
            err.startswith("s3spill: IntegrityError: ")
            and sid in err
            and err.count("\n") == 1
        )
