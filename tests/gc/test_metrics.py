"""GC metrics for a CronJob: a node-exporter textfile, a Pushgateway push, and alert rules."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from s3spill.gc.prometheus import RunMetrics, push_metrics, write_textfile

ROOT = Path(__file__).resolve().parents[2]


def _metrics(exit_code: int = 0) -> RunMetrics:
    return RunMetrics(phase="apply", scope="all", counts={"deleted": 7, "retained_referenced": 3},
                      bytes={"deleted": 7000}, requests={"delete_if_match": 7, "head": 10},
                      duration_seconds=1.5, journal_doubt=1, exit_code=exit_code, finished_at=1_700_000_000)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_textfile_holds_counts_bytes_requests_and_outcome(tmp_path: Path) -> None:
    """The textfile parses as Prometheus text and carries every figure of the run."""
    path = tmp_path / "s3spill_gc.prom"
    write_textfile(str(path), _metrics())
    samples = _samples(path.read_text())
    base = (("phase", "apply"), ("scope", "all"))
    assert samples[("s3spill_gc_objects", (*base, ("status", "deleted")))] == 7
    assert samples[("s3spill_gc_bytes", (*base, ("status", "deleted")))] == 7000
    assert samples[("s3spill_gc_requests", (("operation", "delete_if_match"), *base))] == 7
    assert samples[("s3spill_gc_journal_doubt_objects", base)] == 1
    assert samples[("s3spill_gc_last_success_timestamp_seconds", base)] == 1_700_000_000


def test_a_failed_run_sets_no_success_timestamp(tmp_path: Path) -> None:
    """Only an exit-0 run moves the success timestamp the staleness alert watches."""
    path = tmp_path / "m.prom"
    write_textfile(str(path), _metrics(exit_code=4))
    names = {name for name, _ in _samples(path.read_text())}
    assert "s3spill_gc_last_success_timestamp_seconds" not in names
    assert "s3spill_gc_exit_code" in names


def test_push_replaces_the_job_and_scope_group_on_a_pushgateway() -> None:
    """The push is a PUT to /metrics/job/s3spill_gc/... with the scope in the grouping key."""
    received: list[tuple[str, str, bytes]] = []

    class Gateway(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.command, self.path, body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Gateway)
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    try:
        push_metrics(f"127.0.0.1:{server.server_port}", _metrics())
        thread.join(10)
    finally:
        server.server_close()
    [(method, path, body)] = received
    assert method == "PUT"
    assert path.startswith("/metrics/job/s3spill_gc/") and "scope/all" in path and "phase/apply" in path
    assert b"s3spill_gc_objects" in body


def test_example_alert_rules_use_only_metrics_we_export(tmp_path: Path) -> None:
    """Every metric an example alert expression names is one the run writes."""
    path = tmp_path / "m.prom"
    write_textfile(str(path), _metrics())
    exported = {name for name, _ in _samples(path.read_text())}
    rules = yaml.safe_load((ROOT / "deploy/prometheus/s3spill-gc-alerts.yml").read_text())
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    assert exprs

    named = {m for e in exprs for m in re.findall(r"\bs3spill_[a-z_]+\b", e)}
    assert named and named <= exported, named - exported
