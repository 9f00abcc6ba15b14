"""The `s3spill gc` batch job: JSON reports, dry run by default, documented exit codes."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest

from s3spill.cli import main
from s3spill.cli.gc_cmds import EXIT_REFUSED
from s3spill.leases.journal import LeaseJournal
from s3spill.store.local import LocalStore
from tests.gc_helpers import put_artifact


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
    assert doc["plan"]["counts"] == {"retained_recent": 1, "denied": 1}  # type: ignore[index]
    assert doc["apply"]["dry_run"] is True  # type: ignore[index]
    assert sorted(i.key for i in local_store.list("")) == before


def test_short_ttl_refused_with_exit_code_4(local_store: LocalStore,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A TTL under an hour exits 4 (refused) unless --allow-dangerously-short-ttl is given."""
    code = main(["--store", local_store.url, "gc", "plan", "--all", "--orphan-ttl", "10m"])
    assert code == EXIT_REFUSED
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
    assert code == EXIT_REFUSED


def test_gc_without_scope_is_an_error(local_store: LocalStore, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`gc plan` needs --session or --all (or $S3SPILL_SESSION); otherwise exit 2 with a message."""
    monkeypatch.delenv("S3SPILL_SESSION", raising=False)
    assert main(["--store", local_store.url, "gc", "plan"]) == 2
    assert "--all" in capsys.readouterr().err


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
