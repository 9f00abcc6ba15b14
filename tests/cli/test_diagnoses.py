"""What a failed read or spill is called: a typo is not corruption, a missing id is not "expired"."""

from __future__ import annotations

from pathlib import Path

import pytest

from s3spill import keys
from s3spill.agent.tools import AgentTools
from s3spill.cli.exitcodes import ExitCode
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.models import CleanupPolicy, CleanupScope
from s3spill.gc.plan import plan_cleanup
from s3spill.store.local import LocalStore
from s3spill.testing import EmbeddedS3
from tests.cli.in_process import cli_call, cli_env_fixture
from tests.gc.aged_artifacts import later

SESSION = "diag"

env = cli_env_fixture(SESSION)


def _spill(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    source = tmp_path / "out.txt"
    source.write_bytes(b"".join(b"line %d\n" % i for i in range(50)))
    code, out, _ = cli_call(["spill", str(source)], capsys)
    assert code == 0
    return out.splitlines()[0]


def test_a_mistyped_digest_suffix_is_a_source_id_error_not_corruption(
        env: LocalStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One wrong hex digit in the id's digest: SourceIdError (exit 2), no word of damaged bytes."""
    sid = _spill(tmp_path, capsys)
    typo = sid[:-1] + ("0" if sid[-1] != "0" else "1")
    code, out, err = cli_call(["read", typo], capsys)
    assert code == ExitCode.ERROR and out == ""
    assert "SourceIdError" in err and "typo" in err and sid[-16:] in err
    assert "IntegrityError" not in err and "damaged" not in err
    outcome = AgentTools(env, SESSION).call("read_artifact", {"source_id": typo})
    assert outcome.is_error and outcome.text.startswith("SourceIdError")


def test_an_id_that_never_existed_is_not_found_not_expired(
        env: LocalStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A well-formed id of this session that was never written: ArtifactNotFound, never "expired"."""
    sid = keys.SourceId.parse(_spill(tmp_path, capsys))
    never = f"artifact:{sid.session_hash}:20260101T000000Z-abcdefabcdef-bash:0123456789abcdef"
    for argv in (["read", never], ["grep", never, "x"]):
        code, _, err = cli_call(argv, capsys)
        assert code == ExitCode.ERROR
        assert "ArtifactNotFound" in err and "expired" not in err, err
    outcome = AgentTools(env, SESSION).call("grep_artifact", {"source_id": never, "pattern": "x"})
    assert outcome.is_error and outcome.text.startswith("ArtifactNotFound")
    assert "expired" not in outcome.text


def test_a_body_deleted_by_hand_is_not_called_expired(
        env: LocalStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only GC's DELETED record makes "expired"; a body removed by someone else is "not found"."""
    sid = _spill(tmp_path, capsys)
    parsed = keys.SourceId.parse(sid)
    akey = keys.artifact_key(parsed.session_hash, parsed.name)
    env.delete_if_match(akey, env.head(akey).etag)
    code, _, err = cli_call(["read", sid], capsys)
    assert code == ExitCode.ERROR and "ArtifactNotFound" in err and "expired" not in err


def test_an_artifact_gc_deleted_is_expired_and_the_hint_adds_something(
        env: LocalStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After a real GC run deleted it: ArtifactExpired, re-running is fine, said once; the hint says more."""
    sid = _spill(tmp_path, capsys)
    plan = plan_cleanup(env, CleanupScope(), CleanupPolicy(dry_run=False), out=tmp_path / "plan",
                        now=later())
    assert apply_cleanup(env, plan, now=later).counts["deleted"] == 1
    code, _, err = cli_call(["read", sid], capsys)
    assert code == ExitCode.ERROR and "ArtifactExpired" in err and "GC deleted it" in err
    assert err.count("re-run") == 1 and "ref publish" in err
    outcome = AgentTools(env, SESSION).call("read_artifact", {"source_id": sid})
    assert outcome.is_error and "re-running the command that produced it is fine" in outcome.text


def test_reading_from_a_bucket_that_does_not_exist_says_so(
        moto_server: EmbeddedS3, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`read` against a missing bucket: BucketNotFound naming it, not an expired output."""
    for name, value in moto_server.env().items():
        monkeypatch.setenv(name, value)
    sid = f"artifact:{keys.session_hash(SESSION)}:20260101T000000Z-abcdefabcdef-bash:0123456789abcdef"
    code, _, err = cli_call(["--store", "s3://no-such-bucket-to-read/p", "--session", SESSION, "read", sid],
                        capsys)
    assert code == ExitCode.ERROR and "BucketNotFound" in err and "no-such-bucket-to-read" in err
    assert "expired" not in err and "create the bucket" in err


@pytest.mark.parametrize("what", ["dir", "missing"])
def test_spill_of_a_path_that_is_no_readable_file(what: str, env: LocalStore, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`spill DIR` and `spill /nonexistent`: one line naming the path, no store hint, no errno dump."""
    path = tmp_path if what == "dir" else tmp_path / "nonexistent"
    code, out, err = cli_call(["spill", str(path)], capsys)
    assert code == ExitCode.ERROR and out == ""
    assert f"cannot read {path}" in err and "standard input" in err
    assert "file://" not in err and "Errno" not in err and "FileNotFoundError" not in err


def test_a_bad_retain_until_gets_a_hint_about_that_flag(
        env: LocalStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ConfigError about a flag value does not send the user to $S3SPILL_STORE / $S3SPILL_SESSION."""
    sid = _spill(tmp_path, capsys)
    code, _, err = cli_call(["ref", "publish", sid, "--retain-until", "tomorrow"], capsys)
    assert code == ExitCode.ERROR and "--retain-until" in err
    assert "S3SPILL_STORE" not in err and "S3SPILL_SESSION" not in err
    code, _, err = cli_call(["--store", "ftp://x", "journal", "show"], capsys)
    assert code == ExitCode.ERROR and "S3SPILL_STORE" in err and "S3SPILL_SESSION" not in err
