"""Spans and metrics reach an in-process OpenTelemetry exporter; long-lived processes expose Prometheus."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from s3spill.agent.tools import AgentTools
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore
from s3spill.telemetry import metrics as telemetry
from s3spill.usage.recorder import UsageRecorder

SPANS = InMemorySpanExporter()
READER = InMemoryMetricReader()


@pytest.fixture(scope="module")
def otel() -> Iterator[None]:
    """The SDK installed the standard way (global providers), with in-memory exporters."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(SPANS))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
    telemetry.reset_for_tests()
    yield
    telemetry.reset_for_tests()


def _points(name: str) -> list[Any]:
    data = READER.get_metrics_data()
    assert data is not None
    return [p for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
            if m.name == name for p in m.data.data_points]


def test_spans_and_metrics_reach_an_in_process_exporter(otel: None, tmp_path: Path) -> None:
    """A spill and a read: GenAI execute_tool spans with the tool's name; call counters by tool."""
    store = LocalStore(tmp_path / "s")
    rec = UsageRecorder(store, batch=False)
    spiller = Spiller(store, "otel-session", usage=rec)
    tools = AgentTools(store, "otel-session", usage=rec)
    result = spiller.externalize("line of build output\n" * 20_000, "build")
    assert result.artifact is not None
    assert not tools.call(tools.read_name, {"source_id": result.artifact.source_id}).is_error
    spans = {s.name: s for s in SPANS.get_finished_spans()}
    assert {"execute_tool build", "execute_tool read_artifact"} <= set(spans)
    attrs = spans["execute_tool build"].attributes or {}
    assert attrs["gen_ai.operation.name"] == "execute_tool" and attrs["gen_ai.tool.name"] == "build"
    calls = {(p.attributes["gen_ai.tool.name"], p.attributes["s3spill.operation"]): p.value
             for p in _points("s3spill.tool.calls")}
    assert calls[("build", "spill")] >= 1 and calls[("build", "read")] >= 1
    sizes = _points("s3spill.tool.output.size")
    assert sizes and max(p.max for p in sizes) == result.total_bytes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_mcp_server_process_exposes_prometheus_counters(tmp_path: Path) -> None:
    """``s3spill mcp`` with $S3SPILL_METRICS_PORT serves /metrics with the s3spill counters."""
    port = _free_port()
    env = {**os.environ, "S3SPILL_METRICS_PORT": str(port), "S3SPILL_STORE": (tmp_path / "s").as_uri(),
           "S3SPILL_SESSION": "prom-session", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "s3spill", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        body = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    body = r.read().decode()
                break
            except OSError:
                time.sleep(0.2)
        assert "# TYPE s3spill_tool_calls_total counter" in body
        assert "s3spill_spilled_outputs" in body
    finally:
        proc.kill()
        proc.wait(10)


def test_a_one_shot_spill_does_not_import_opentelemetry(tmp_path: Path) -> None:
    """A process that never configured OpenTelemetry spills without importing it (its import
    would be most of a hook's time), though the package is installed."""
    code = ("import sys\nfrom s3spill.spill.spiller import Spiller\n"
            "from s3spill.store.local import LocalStore\n"
            "s = Spiller(LocalStore(sys.argv[1]), 'one-shot', journal=None)\n"
            "s.externalize('a\\n' * 10, 'ls')\ns.externalize('line\\n' * 100_000, 'build')\n"
            "print('opentelemetry' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "False"


def test_a_meter_provider_installed_later_receives_the_next_batch() -> None:
    """Batches counted before any meter provider exists record nothing (and fail nothing); a
    provider installed the standard way afterwards gets every event of the next batch."""
    code = ("from opentelemetry import metrics\n"
            "from opentelemetry.sdk.metrics import MeterProvider\n"
            "from opentelemetry.sdk.metrics.export import InMemoryMetricReader\n"
            "from s3spill.telemetry.metrics import observe_events\n"
            "from s3spill.usage.events import UsageEvent\n"
            "def ev(i, op):\n"
            "    return UsageEvent(session='0' * 32, op=op, tool='build', shown='x' * i, shown_chars=i,\n"
            "                      shown_bytes=i, raw_bytes=100 + i, spilled=i % 2 == 0, id=str(i), ts='')\n"
            "observe_events([ev(i, 'spill') for i in range(3)])\n"
            "reader = InMemoryMetricReader()\n"
            "metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))\n"
            "observe_events([ev(i, 'spill') for i in range(1, 6)] + [ev(7, 'read')])\n"
            "data = reader.get_metrics_data().resource_metrics\n"
            "points = {m.name: list(m.data.data_points) for rm in data for sm in rm.scope_metrics\n"
            "          for m in sm.metrics}\n"
            "calls = sorted((p.attributes['s3spill.operation'], p.attributes['s3spill.spilled'], p.value)\n"
            "               for p in points['s3spill.tool.calls'])\n"
            "sizes = sorted((p.count, p.sum) for p in points['s3spill.tool.output.size'])\n"
            "shown = sum(p.sum for p in points['s3spill.tool.shown.size'])\n"
            "print(calls, sizes, shown)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                         check=True).stdout
    assert out.strip() == ("[('read', False, 1), ('spill', False, 3), ('spill', True, 2)] "
                           "[(2, 206), (3, 309)] 22")
