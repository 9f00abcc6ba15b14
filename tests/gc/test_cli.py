"""The `s3spill gc` batch job: JSON reports, dry run by default, documented exit codes."""

from __future__ import annotations

import io
import json
import re
import shlex
import time
from pathlib import Path

import pytest

from s3spill.cli import main
from s3spill.cli.exitcodes import ExitCode
from s3spill.leases.journal import LeaseJournal
from s3spill.store.local import LocalStore
from tests.gc.aged_artifacts import put_artifact


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_run_is_a_dry_run_unless_apply(local_store: LocalStore, capsys: pytest.CaptureFixture[str]) -> None:
    """`gc run` without --apply deletes nothing; young artifacts are retained_recent either way."""
    put_artifact(local_store, "s1", b"fresh output")
    LeaseJournal(local_store, "s1").touch()  # as the spiller does: the session is live
    before = sorted(i.key for i in local_store.list(""))
    code, doc = _run(capsys, "--store", local_store.url, "gc", "run", "--all")
    assert code == 0
    assert doc["plan"]["counts"] == {"retained_recent": 1, "retained_protocol": 1}  # type: ignore[index]
    assert doc["apply"]["dry_run"] is True  # type: ignore[index]
    assert sorted(i.key for i in local_store.list("")) == before


def test_short_ttl_refused_with_exit_code_4(local_store: LocalStore,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A TTL under an hour exits 4 (refused) unless --allow-dangerously-short-ttl is given."""
    code = main(["--store", local_store.url, "gc", "plan", "--all", "--orphan-ttl", "10m"])
    assert code == ExitCode.REFUSED
    assert "allow-dangerously-short-ttl" in capsys.readouterr().err
    code, doc = _run(capsys, "--store", local_store.url, "gc", "plan", "--all", "--orphan-ttl", "10m",
                     "--allow-dangerously-short-ttl")
    assert code == 0 and doc["phase"] == "plan"


def test_plan_to_store_then_apply_by_id(local_store: LocalStore, capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    """A plan saved in the store is applied by id from another invocation; the orphan goes."""
    put_artifact(local_store, "s1", b"old")
    time.sleep(2.1)  # past the 1 s TTL and the name's 1 s timestamp resolution
    code, doc = _run(capsys, "--store", local_store.url, "gc", "plan", "--session", "s1",
                     "--orphan-ttl", "1s", "--session-ttl", "1s", "--allow-dangerously-short-ttl",
                     "--out", "store")
    assert code == 0
    plan_id = str(doc["plan_id"])
    code, report = _run(capsys, "--store", local_store.url, "gc", "apply", f"store:{plan_id}",
                        "--orphan-ttl", "1s", "--session-ttl", "1s", "--allow-dangerously-short-ttl")
    assert code == 0 and report["counts"] == {"deleted": 1}
    assert [i.key for i in local_store.list("") if "/artifacts/" in i.key] == []
    code = main(["--store", local_store.url, "gc", "apply", str(tmp_path / "missing.jsonl")])
    assert code == ExitCode.ERROR  # a mistyped path is a usage error, nothing refused


def test_gc_without_scope_plans_the_directory_session(local_store: LocalStore, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`gc plan` without --session or --all plans this directory's session, and no other."""
    for name in ("S3SPILL_SESSION", "CLAUDE_SESSION_ID", "CLAUDE_CODE_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x\n" * 10)))
    assert main(["--store", local_store.url, "spill"]) == 0
    capsys.readouterr()
    assert main(["--store", local_store.url, "gc", "plan"]) == 0
    assert json.loads(capsys.readouterr().out)["sessions"] == 1
    monkeypatch.chdir(elsewhere)
    assert main(["--store", local_store.url, "gc", "plan"]) == 0
    assert json.loads(capsys.readouterr().out)["sessions"] == 0


def _on_a_terminal(argv: list[str], tmp_path: Path) -> tuple[int, str]:
    """Run the CLI in a child whose stdout is a pseudo-terminal; what it printed there."""
    import os
    import pty
    import subprocess
    import sys

    from s3spill.testing import child_env

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "s3spill", *argv], stdout=follower,
                            stderr=subprocess.DEVNULL, env=child_env(), cwd=tmp_path)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode().replace("\r\n", "\n")


def test_gc_prints_a_summary_line_on_a_terminal(local_store: LocalStore, tmp_path: Path) -> None:
    """On a TTY, plan and apply print one line a person reads; --json still prints the JSON report."""
    put_artifact(local_store, "s1", b"orphan\n")
    short = ["--orphan-ttl", "1s", "--session-ttl", "1s", "--allow-dangerously-short-ttl"]
    time.sleep(1.2)
    plan = tmp_path / "plan.jsonl"
    code, out = _on_a_terminal(["--store", local_store.url, "gc", "plan", "--session", "s1",
                                "--out", str(plan), *short], tmp_path)
    assert code == 0, out
    assert re.match(r"gc plan: to delete 1 \(\d+ B\); 1 session\(s\), \d+ requests in [\d.]+ s\n", out), out
    # The plan's TTL flags ride along: the default 24 h apply-time TTLs would keep the orphan.
    assert (f"apply it with: s3spill --store {local_store.url} gc apply {' '.join(short)} {plan}"
            in out) and "{" not in out
    code, out = _on_a_terminal(["--store", local_store.url, "gc", "apply", str(plan), *short], tmp_path)
    assert code == 0 and re.match(r"gc apply: deleted 1 \(\d+ B\); 1 session\(s\)", out), out
    code, out = _on_a_terminal(["--store", local_store.url, "gc", "plan", "--session", "s1", "--json",
                                *short], tmp_path)
    assert code == 0 and json.loads(out)["phase"] == "plan"


def test_apply_with_applies_what_a_short_ttl_plan_planned(local_store: LocalStore, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The plan's `apply_with` carries its TTL flags, so running exactly that deletes what it planned."""
    put_artifact(local_store, "s1", b"old output")
    LeaseJournal(local_store, "s1").touch()
    time.sleep(2.1)  # past the 1 s TTLs and the name's 1 s timestamp resolution
    code, doc = _run(capsys, "--store", local_store.url, "gc", "plan", "--session", "s1",
                     "--orphan-ttl", "1s", "--session-ttl", "1s", "--allow-dangerously-short-ttl",
                     "--out", str(tmp_path / "plan.jsonl"))
    assert code == 0 and doc["counts"]["planned_delete"] == 1  # type: ignore[index]
    command = shlex.split(str(doc["apply_with"]))
    assert command[:2] == ["s3spill", "--store"] and "--allow-dangerously-short-ttl" in command
    code, report = _run(capsys, *command[1:])
    assert code == 0 and report["counts"]["deleted"] == 1  # type: ignore[index]
    assert "retained_recent" not in report["counts"]  # type: ignore[operator]


def test_a_kept_item_names_the_apply_time_ttl_that_kept_it(local_store: LocalStore, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Under the default 24 h TTLs a 1 s plan keeps the artifact, and the reason names the apply-time TTL."""
    put_artifact(local_store, "s1", b"old output")
    LeaseJournal(local_store, "s1").touch()
    time.sleep(2.1)
    plan = tmp_path / "plan.jsonl"
    code, _ = _run(capsys, "--store", local_store.url, "gc", "plan", "--session", "s1", "--orphan-ttl",
                   "1s", "--session-ttl", "1s", "--allow-dangerously-short-ttl", "--out", str(plan))
    assert code == 0
    code, report = _run(capsys, "--store", local_store.url, "gc", "apply", str(plan))
    assert code == 0 and report["counts"]["retained_recent"] == 1  # type: ignore[index]
    reasons = [item["reason"] for item in report["items"]  # type: ignore[attr-defined]
               if item["outcome"] == "retained_recent"]
    assert len(reasons) == 1 and "since the plan" not in reasons[0]
    assert "apply-time" in reasons[0] and "24h" in reasons[0], reasons
