"""Prometheus metrics of a GC run, for a CronJob: a textfile or a Pushgateway push.

Why not an HTTP endpoint: a GC run is a batch job that exits; Prometheus cannot scrape
it. The two batch-job patterns are a textfile for node-exporter's textfile collector
(written atomically: a temporary file renamed into place) and a push to a Pushgateway
(grouped by job and scope, so shards do not overwrite each other). Metric names follow
Prometheus conventions (``_total`` counters, ``_seconds``, ``_bytes``); example alert
rules are in ``deploy/prometheus/s3spill-gc-alerts.yml``.

Needs the ``metrics`` extra (``prometheus-client``); imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunMetrics", "push_metrics", "write_textfile"]


@dataclass
class RunMetrics:
    """What one GC phase reports: counts and bytes per status, requests, outcome."""

    phase: str
    scope: str
    counts: Mapping[str, int]
    bytes: Mapping[str, int] = field(default_factory=dict)
    requests: Mapping[str, int] = field(default_factory=dict)
    duration_seconds: float = 0.0
    #: Objects kept because their session's journal evidence was in doubt (needs a human).
    journal_doubt: int = 0
    #: The exit code the run ends with (0 ok; see the CLI's exit-code table).
    exit_code: int = 0
    finished_at: float = 0.0

    def registry(self) -> Any:
        """A fresh prometheus-client registry holding this run's metrics."""
        from prometheus_client import CollectorRegistry, Gauge

        reg = CollectorRegistry()
        labels = ["phase", "scope"]
        objects = Gauge("s3spill_gc_objects", "Objects per decision in the last GC run",
                        [*labels, "status"], registry=reg)
        size = Gauge("s3spill_gc_bytes", "Bytes per decision in the last GC run",
                     [*labels, "status"], registry=reg)
        requests = Gauge("s3spill_gc_requests", "Store requests of the last GC run by operation",
                         [*labels, "operation"], registry=reg)
        duration = Gauge("s3spill_gc_duration_seconds", "Wall time of the last GC run", labels,
                         registry=reg)
        doubt = Gauge("s3spill_gc_journal_doubt_objects",
                      "Objects retained because their session's journal evidence was in doubt", labels,
                      registry=reg)
        exit_code = Gauge("s3spill_gc_exit_code", "Exit code of the last GC run (0 = ok)", labels,
                          registry=reg)
        finished = Gauge("s3spill_gc_last_run_timestamp_seconds",
                         "Unix time the last GC run finished", labels, registry=reg)
        success = Gauge("s3spill_gc_last_success_timestamp_seconds",
                        "Unix time of the last GC run that exited 0", labels, registry=reg)
        for status, n in self.counts.items():
            objects.labels(self.phase, self.scope, status).set(n)
        for status, n in self.bytes.items():
            size.labels(self.phase, self.scope, status).set(n)
        for op, n in self.requests.items():
            requests.labels(self.phase, self.scope, op).set(n)
        duration.labels(self.phase, self.scope).set(self.duration_seconds)
        doubt.labels(self.phase, self.scope).set(self.journal_doubt)
        exit_code.labels(self.phase, self.scope).set(self.exit_code)
        finished.labels(self.phase, self.scope).set(self.finished_at)
        if self.exit_code == 0:
            success.labels(self.phase, self.scope).set(self.finished_at)
        return reg


def write_textfile(path: str, metrics: RunMetrics) -> None:
    """Write the node-exporter textfile atomically (prometheus-client renames into place)."""
    from prometheus_client import write_to_textfile

    write_to_textfile(path, metrics.registry())


def push_metrics(gateway: str, metrics: RunMetrics, job: str = "s3spill_gc") -> None:
    """Replace this job+scope's group on a Pushgateway (``host:port`` or a URL)."""
    from prometheus_client import push_to_gateway

    push_to_gateway(gateway, job=job, registry=metrics.registry(),
                    grouping_key={"scope": metrics.scope, "phase": metrics.phase})
