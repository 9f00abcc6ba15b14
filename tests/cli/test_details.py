"""CLI details that must be true: what `ref publish --json` prints, refused past leases, footers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from s3spill.cli.exitcodes import ExitCode
from s3spill.leases.journal import LeaseJournal
from s3spill.store.local import LocalStore
from tests.cli.in_process import cli_call, cli_env_fixture

SESSION = "details"

env = cli_env_fixture(SESSION)


def _spill(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes) -> str:
    source = tmp_path / "out.txt"
    source.write_bytes(data)
    code, out, _ = cli_call(["spill", str(source)], capsys)
    assert code == 0
    return out.splitlines()[0]


def test_ref_publish_json_names_the_source_id(env: LocalStore, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`ref publish --json` reports the source id it published, also when run again (a no-op)."""
    sid = _spill(tmp_path, capsys, b"keep me\n")
    for outcome in ("committed", "already_committed"):
        code, out, _ = cli_call(["ref", "publish", sid, "--txid", "tx-details-1", "--json"], capsys)
        doc = json.loads(out)
        assert code == 0 and doc["outcome"] == outcome and doc["source_id"] == sid


def test_retain_until_in_the_past_is_refused(env: LocalStore, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A lease that expired before it was written protects nothing: refused, nothing published."""
    sid = _spill(tmp_path, capsys, b"keep me\n")
    code, out, err = cli_call(["ref", "publish", sid, "--retain-until", "2020-01-01T00:00:00+00:00"], capsys)
    assert code == ExitCode.ERROR and out == ""
    assert "in the past" in err and "future time" in err
    assert LeaseJournal(env, SESSION).view().transactions == ()
    code, _, _ = cli_call(["ref", "publish", sid, "--retain-until", "2999-01-01T00:00:00+00:00"], capsys)
    assert code == 0


def test_footers_name_the_cli_flags(env: LocalStore, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`grep` says to raise --max-matches and `read` to continue with --offset: the flags that exist."""
    sid = _spill(tmp_path, capsys, b"".join(b"match %d\n" % i for i in range(30)))
    code, out, _ = cli_call(["grep", sid, "match", "--max-matches", "5"], capsys)
    assert code == 0 and "raise --max-matches]" in out and "raise max_matches" not in out
    code, out, _ = cli_call(["grep", sid, "match 1$"], capsys)
    assert code == 0 and "read around one with --offset LINE-1" in out
    code, out, _ = cli_call(["read", sid, "--limit", "10"], capsys)
    assert code == 0 and out.rstrip().endswith("continue with --offset 10 --char-offset 0]")
    code, out, _ = cli_call(["read", sid, "--offset", "10", "--limit", "10"], capsys)
    assert "offset=" not in out


def test_run_points_with_cli_commands_unless_told_otherwise(env: LocalStore,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`s3spill run` names `s3spill read`/`s3spill grep`; --pointer-style tools names the tool calls."""
    big = ["sh", "-c", "seq 1 100000"]
    code, out, _ = cli_call(["run", "--", *big], capsys)
    assert code == 0 and "`s3spill read <source_id> --offset <lines to skip>" in out
    assert "`s3spill grep <source_id> '<regex>'`" in out and "read_artifact(" not in out
    code, out, _ = cli_call(["run", "--pointer-style", "tools", "--", *big], capsys)
    assert code == 0 and "read_artifact(source_id, offset=" in out and "s3spill read" not in out
