"""The CLI's one error boundary: one line on stderr, one exit-code table, usage errors exit 2."""

from __future__ import annotations

import io
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.cli import main
from s3spill.cli.exitcodes import ExitCode, markdown_table
from s3spill.store import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import EmbeddedS3, child_env

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
LINE = re.compile(r"^s3spill: .+ \(.+\)\n$")


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _child(argv: list[str], tmp_path: Path, *, stdin: bytes = b"", env: dict[str, str] | None = None,
           preexec: object = None) -> subprocess.CompletedProcess[bytes]:
    full = child_env({"S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": "s",
                      **(env or {})})
    return subprocess.run([sys.executable, "-m", "s3spill", *argv], env=full, input=stdin,
                          capture_output=True, timeout=120, preexec_fn=preexec)  # type: ignore[arg-type]


def test_docs_show_the_exit_code_table() -> None:
    """docs/configuration.md's exit-code table is the one the CLI uses, word for word."""
    assert markdown_table() in CONFIGURATION.read_text(encoding="utf-8")


def test_every_code_has_one_meaning() -> None:
    """No two meanings share a code (3 is 'retained' everywhere; corrupt is 5)."""
    values = [int(c) for c in ExitCode]
    assert len(values) == len(set(values)) and ExitCode.RETAINED == 3 and ExitCode.CORRUPT == 5


@pytest.mark.parametrize(("argv", "mentions"), [
    (["--log-level", "verbose", "journal", "show"], "--log-level"),
    (["gc", "plan", "--all", "--shard", "0/0"], "--shard"),
    (["gc", "plan", "--all", "--shard", "5/2"], "--shard"),
    (["gc", "plan", "--max-deletions", "-5"], "--max-deletions"),
    (["read", "sid", "--limit", "0"], "--limit"),
    (["grep", "sid", "x", "--context", "-1"], "--context"),
])
def test_bad_arguments_are_usage_errors(argv: list[str], mentions: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Invalid flag values exit 2 with one line naming the flag, before any store is touched."""
    with pytest.raises(SystemExit) as exc:
        main(["--store", (tmp_path / "s").as_uri(), "--session", "s", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and mentions in err and LINE.match(err), err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("flag", ["--tool", "--label", "--call-id"])
def test_non_utf8_text_flags_are_usage_errors(flag: str, tmp_path: Path) -> None:
    """A non-UTF-8 --tool/--label/--call-id is refused in one line (exit 2), not a traceback."""
    proc = _child(["spill", flag, "\udcff"], tmp_path, stdin=b"hello\n")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and flag in err and LINE.match(err) and b"Traceback" not in proc.stderr


def test_run_with_a_non_utf8_call_id_never_starts_the_command(tmp_path: Path) -> None:
    """`run --call-id $'\\xff'` refuses before running, so no output is produced and lost."""
    marker = tmp_path / "ran"
    proc = _child(["run", "--call-id", "\udcff", "--", "sh", "-c", f"seq 1 100000; touch {marker}"],
                  tmp_path)
    assert proc.returncode == 2 and LINE.match(proc.stderr.decode()) and not marker.exists()
    assert proc.stdout == b""


def test_store_url_naming_a_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--store file:///a/regular/file is one line and exit 2."""
    regular = tmp_path / "plain"
    regular.write_text("not a store")
    code, _, err = _cli(["--store", regular.as_uri(), "--session", "s", "journal", "show"], capsys)
    assert code == 2 and LINE.match(err) and "not a directory" in err.lower()


def test_broken_pipe_is_a_quiet_exit(tmp_path: Path) -> None:
    """`journal show | head -0`: no traceback, nothing on stderr, exit 141 (128 + SIGPIPE)."""
    env = child_env({"S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": "s"})
    (tmp_path / "store").mkdir()  # a read never creates a store
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte, as with `| head -0`
    try:
        proc = subprocess.run([sys.executable, "-m", "s3spill", "journal", "show"],
                              env=env, stdout=write_end, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    assert proc.stderr == b"" and proc.returncode == ExitCode.BROKEN_PIPE, proc.stderr


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


def test_disk_full_is_one_line(tmp_path: Path) -> None:
    """A write that hits RLIMIT_FSIZE (`File too large`) is one line, exit 2, and no .part left."""
    data = os.urandom(1_000_000)  # incompressible: zstd at rest cannot shrink it under the limit
    proc = _child(["spill"], tmp_path, stdin=data, preexec=_limit_file_size)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and LINE.match(err) and "disk full" in err, err
    assert list((tmp_path / "store" / "tmp").iterdir()) == []


def test_missing_credentials_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Without AWS credentials any S3 command says so in one line and exits 2."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    code, _, err = _cli(["--store", "s3://bucket/p", "--session", "s", "journal", "show"], capsys)
    assert code == 2 and LINE.match(err) and "credentials" in err


def test_doctor_against_a_missing_bucket(moto_server: EmbeddedS3, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """doctor on a bucket that does not exist: one line naming the bucket, exit 2 (not 1)."""
    for name, value in moto_server.env().items():
        monkeypatch.setenv(name, value)
    code, _, err = _cli(["--store", "s3://no-such-bucket-here/p", "doctor"], capsys)
    assert code == 2 and LINE.match(err) and "no-such-bucket-here" in err


def test_doctor_against_an_unreachable_endpoint(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """doctor against a closed port: one line, exit 6 (unavailable), neither 1 nor a traceback."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    code, _, err = _cli(["--store", "s3://bucket/p", "doctor"], capsys)
    assert code == ExitCode.UNAVAILABLE and LINE.match(err), err


def test_an_unexpected_exception_is_internal_not_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug surfaces as one line and exit 70; --debug shows the traceback instead."""
    def boom(*_: object, **__: object) -> None:
        raise TypeError("boom")

    monkeypatch.setattr("s3spill.leases.journal.LeaseJournal.view", boom)
    (tmp_path / "s").mkdir()  # a read never creates a store
    argv = ["--store", (tmp_path / "s").as_uri(), "--session", "s", "journal", "show"]
    code, _, err = _cli(argv, capsys)
    assert code == ExitCode.INTERNAL and LINE.match(err) and "--debug" in err
    with pytest.raises(TypeError):
        main(["--debug", *argv])


def test_grep_without_match_and_stdin_round_trip_keep_their_codes(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """grep's 'no match' stays 1 (NEGATIVE) under the table."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a\nb\n")))
    base = ["--store", (tmp_path / "s").as_uri(), "--session", "s"]
    assert main([*base, "spill"]) == 0
    sid = capsysbinary.readouterr().out.splitlines()[0].decode()
    assert main([*base, "grep", sid, "zzz"]) == ExitCode.NEGATIVE


def test_journal_verify_exits_corrupt_when_the_manifest_fails_its_digest(
        store: ObjectStore, capsys: pytest.CaptureFixture[str]) -> None:
    """A manifest whose bytes no longer match their stored SHA-256 is corrupt: exit 5, not 2."""
    from s3spill import keys
    from tests.leases.journal_artifacts import SESSION, put_artifact

    claim, _ = put_artifact(store)
    assert main(["--store", store.url, "--session", SESSION, "ref", "publish", claim.source_id]) == 0
    key = keys.manifest_key(keys.session_hash(SESSION))
    info = store.head(key)
    raw = store.get(key)
    # Same length, still valid JSON, same records: only the digest can tell.
    at = raw.index(b'"created_at":"') + len(b'"created_at":"2')
    tampered = raw[:at] + (b"1" if raw[at:at + 1] != b"1" else b"3") + raw[at + 1:]
    if isinstance(store, LocalStore):  # flip body bytes in place; the trailer keeps the old digest
        path = store.root / "objects" / key
        path.write_bytes(tampered + path.read_bytes()[len(raw):])
    else:
        client, bucket = store.client, store.bucket  # type: ignore[attr-defined]
        client.put_object(Bucket=bucket, Key=store.full_key(key),  # type: ignore[attr-defined]
                          Body=tampered, Metadata=info.metadata)
    capsys.readouterr()
    code = main(["--store", store.url, "--session", SESSION, "journal", "verify"])
    err = capsys.readouterr().err
    assert code == ExitCode.CORRUPT and err.startswith("s3spill: ") and err.count("\n") == 1
