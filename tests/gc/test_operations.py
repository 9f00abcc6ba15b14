"""GC as a batch job: JSON Lines report, progress, metrics, the run lock, and SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from s3spill.artifacts.store import ArtifactStore
from s3spill.cli import main
from s3spill.cli.exitcodes import ExitCode
from s3spill.gc.lock import GcRunLock
from s3spill.store.local import LocalStore

ROOT = Path(__file__).resolve().parents[2]
SHORT = ["--orphan-ttl", "0s", "--session-ttl", "0s", "--allow-dangerously-short-ttl", "--no-probe"]


def _spill(store: LocalStore, sessions: int, per_session: int = 1) -> int:
    arts = ArtifactStore(store)
    for s in range(sessions):
        for n in range(per_session):
            arts.write(f"session-{s}", f"output {s}/{n}\n".encode() * 50, "bash")
    return sessions * per_session


def _artifact_objects(store: LocalStore) -> list[str]:
    return [i.key for i in store.list("v1/sessions/") if "/artifacts/" in i.key]


def test_report_has_a_line_per_decision_with_keys_and_one_summary(
        local_store: LocalStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every object gets a decision line naming its key; the summary's counts equal stdout's."""
    n = _spill(local_store, 3, 2)
    report = tmp_path / "report.jsonl"
    code = main(["--store", local_store.url, "gc", "run", "--all", "--apply", *SHORT,
                 "--report", str(report)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    *decisions, summary = lines
    assert summary["kind"] == "gc_summary"
    assert summary["apply"]["counts"] == out["apply"]["counts"]
    assert out["apply"]["counts"]["deleted"] == n  # each artifact, its index with it
    assert "items" not in out["apply"]
    applied = [d for d in decisions if d["phase"] == "apply"]
    planned = [d for d in decisions if d["phase"] == "plan"]
    assert len(planned) == sum(out["plan"]["counts"].values())
    assert sum(1 for d in applied if d["outcome"] == "deleted") == n
    assert all(d["key"] and d["key"].startswith("v1/") for d in applied)
    assert out["plan"]["sessions"] == 3


def test_a_second_run_of_the_same_scope_exits_locked(local_store: LocalStore, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """While a live run holds the scope's lock, `gc run --apply` exits 8 and deletes nothing."""
    _spill(local_store, 1)
    before = sorted(i.key for i in local_store.list("v1/sessions/"))
    holder = GcRunLock(local_store, "all", "other-run", ttl=timedelta(minutes=10))
    holder.acquire()
    metrics = tmp_path / "gc.prom"
    try:
        code = main(["--store", local_store.url, "gc", "run", "--all", "--apply", *SHORT,
                     "--metrics-textfile", str(metrics)])
        err = capsys.readouterr().err
        assert code == ExitCode.LOCKED and "other-run" in err
        assert sorted(i.key for i in local_store.list("v1/sessions/")) == before
        samples = {s.name: s.value for f in text_string_to_metric_families(metrics.read_text())
                   for s in f.samples}
        assert samples["s3spill_gc_exit_code"] == ExitCode.LOCKED
        assert "s3spill_gc_last_success_timestamp_seconds" not in samples
        # a dry run takes no lock: it deletes nothing, so it may overlap
        assert main(["--store", local_store.url, "gc", "run", "--all", *SHORT]) == 0
    finally:
        holder.release()
    capsys.readouterr()
    assert main(["--store", local_store.url, "gc", "run", "--all", "--apply", *SHORT]) == 0


def test_progress_counts_work_done_and_metrics_say_success(local_store: LocalStore, tmp_path: Path) -> None:
    """Off a TTY, plan and apply log progress lines whose `done` never exceeds `total`."""
    _spill(local_store, 30)
    metrics = tmp_path / "gc.prom"
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    proc = subprocess.run(
        [sys.executable, "-m", "s3spill", "--log-level", "info", "--store", local_store.url, "gc", "run",
         "--all", "--apply", *SHORT, "--metrics-textfile", str(metrics), "--max-concurrency", "2"],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    plan = [e for e in events if e["event"] == "gc.plan.progress"]
    apply = [e for e in events if e["event"] == "gc.apply.progress"]
    assert plan and plan[-1]["done"] >= 25 and all("rate" in e for e in plan)
    assert apply and all(e["done"] <= e["total"] for e in apply)
    assert apply[-1]["done"] == apply[-1]["total"]
    done = [e for e in events if e["event"] == "gc.apply.done"]
    assert done and done[0]["counts"] == json.loads(proc.stdout)["apply"]["counts"]
    samples = {s.name: s.value for f in text_string_to_metric_families(metrics.read_text())
               for s in f.samples}
    assert samples["s3spill_gc_exit_code"] == 0
    assert samples["s3spill_gc_last_success_timestamp_seconds"] > 0


def test_sigterm_finishes_what_is_in_flight_and_still_reports(local_store: LocalStore,
                                                             tmp_path: Path) -> None:
    """A terminated apply exits 130 with a report that says interrupted and counts what it did."""
    n = _spill(local_store, 40)
    plan = tmp_path / "plan.jsonl"
    assert main(["--store", local_store.url, "gc", "plan", "--all", *SHORT[:-1], "--out", str(plan)]) == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "s3spill", "--store", local_store.url, "gc", "apply", str(plan), *SHORT,
         "--rate-limit", "20", "--max-concurrency", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    # Signalled once it is deleting (its handler is in place by then), not after a fixed
    # sleep: under load the child's imports alone took over the 3 s once waited here.
    deadline = time.monotonic() + 60
    while len(_artifact_objects(local_store)) == 2 * n and proc.poll() is None:
        assert time.monotonic() < deadline, "the apply deleted nothing within 60 s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.INTERRUPTED, err[-3000:]
    doc = json.loads(out)
    assert doc["interrupted"] is True
    deleted = doc["counts"].get("deleted", 0)
    assert 0 < deleted < n
    remaining = _artifact_objects(local_store)
    assert len(remaining) == 2 * (n - deleted)  # each body with its index
    assert "Traceback" not in err
