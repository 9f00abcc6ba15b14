"""Counters per tool call (from usage events) and a span per spill, read and grep."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from s3spill.log import get_logger

__all__ = ["observe_event", "observe_events", "observe_fleet", "prometheus_exposition",
           "serve_metrics_from_env", "tool_span"]

log = get_logger("s3spill.telemetry")
_lock = threading.Lock()
_prom: dict[str, Any] | None = None
_otel: dict[str, Any] | None = None
PORT_ENV = "S3SPILL_METRICS_PORT"


def _prometheus(load: bool = True) -> dict[str, Any]:
    """The counters; with ``load`` false, only if prometheus-client is already imported."""
    global _prom
    if not load and _prom is None and "prometheus_client" not in sys.modules:
        return {}
    with _lock:
        if _prom is None:
            try:
                from prometheus_client import Counter
            except ImportError:
                _prom = {}
                return _prom
            _prom = {
                "calls": Counter("s3spill_tool_calls", "Tool calls seen, by operation and tool",
                                 ["op", "tool"]),
                "spilled": Counter("s3spill_spilled_outputs", "Outputs stored rather than inline", ["tool"]),
                "output": Counter("s3spill_tool_output_bytes", "Bytes of tool outputs seen", ["tool"]),
                "stored": Counter("s3spill_stored_bytes", "Compressed bytes stored", ["tool"]),
                "shown": Counter("s3spill_shown_bytes", "Bytes shown to the model", ["op", "tool"]),
                # The fleet controls (s3spill.fleet): what a quota refused, what a cap cut, what
                # GC gave back to the quota counters.
                "quota_refused": Counter("s3spill_quota_refusals", "Spills not stored: a quota was "
                                         "reached", ["scope"]),
                "capped": Counter("s3spill_capped_outputs", "Outputs stored truncated at the cap", ["tool"]),
                "capped_bytes": Counter("s3spill_capped_omitted_bytes", "Bytes a cap left out of the store",
                                        ["tool"]),
                "credited": Counter("s3spill_quota_credited_bytes", "Bytes GC gave back to quota counters",
                                    ["scope"]),
            }
        return _prom


def _opentelemetry(load: bool = True) -> dict[str, Any]:
    """The instruments; with ``load`` false, only if OpenTelemetry is already imported."""
    global _otel
    if not load and _otel is None and "opentelemetry" not in sys.modules:
        return {}
    with _lock:
        if _otel is None:
            try:
                from opentelemetry import metrics, trace
            except ImportError:
                _otel = {}
                return _otel
            meter = metrics.get_meter("s3spill")
            _otel = {
                "metrics": metrics, "inert": _inert_providers(metrics),
                "tracer": trace.get_tracer("s3spill"),
                "calls": meter.create_counter("s3spill.tool.calls", unit="{call}",
                                              description="Tool calls seen, by operation and tool"),
                "output": meter.create_histogram("s3spill.tool.output.size", unit="By",
                                                 description="Bytes of each tool output"),
                "shown": meter.create_histogram("s3spill.tool.shown.size", unit="By",
                                                description="Bytes shown to the model per call"),
            }
        return _otel


def _inert_providers(metrics: Any) -> tuple[type, ...]:
    """The API's meter providers that record nothing: its no-op one, and the proxy it
    returns until a real provider is installed (private in the API: looked up by name)."""
    found: list[type] = [metrics.NoOpMeterProvider]
    with contextlib.suppress(ImportError, AttributeError):
        from opentelemetry.metrics import _internal

        found.append(_internal._ProxyMeterProvider)
    return tuple(found)


def _recording(otel: dict[str, Any]) -> dict[str, Any]:
    """``otel``, or ``{}`` while no meter provider is installed (the API's proxy or no-op one).

    Why: without a provider every ``add`` and ``record`` goes through a proxy instrument to
    a no-op — three calls and an attribute dict per event, about a tenth of a usage event's
    cost on the writer thread, for nothing (benchmarks/usage_bench.py overhead). A provider
    installed later is seen at the next batch; what the proxy would have done with the
    events before it (drop them) is what skipping does.
    """
    if not otel:
        return otel
    provider = otel["metrics"].get_meter_provider()
    return {} if isinstance(provider, otel["inert"]) else otel


def reset_for_tests() -> None:
    """Forget the OpenTelemetry instruments (a test installs its own provider first)."""
    global _otel
    with _lock:
        _otel = None


_children: dict[tuple[str, ...], Any] = {}


def _child(metric: str, *labels: str) -> Any:
    """A labelled counter, looked up once (``labels()`` costs more than the increment)."""
    key = (metric, *labels)
    found = _children.get(key)
    if found is None:
        found = _children[key] = _prometheus()[metric].labels(*labels)
    return found


def observe_event(op: str, tool: str, raw_bytes: int, shown_bytes: int, spilled: bool,
                  stored_bytes: int | None, *, load: bool = True) -> None:
    """Count one tool call in every installed client; never raises.

    ``load=False`` (a one-shot process: a hook, the CLI) counts only into clients the
    process has already imported: such a process exposes no ``/metrics``, and importing
    prometheus-client and OpenTelemetry costs more than the rest of a ``read`` (~35 ms);
    one that configured OpenTelemetry has imported it, and is counted.
    """
    try:
        if _prometheus(load):
            _child("calls", op, tool).inc()
            _child("shown", op, tool).inc(shown_bytes)
            if op == "spill":
                _child("output", tool).inc(raw_bytes)
                if spilled:
                    _child("spilled", tool).inc()
                    _child("stored", tool).inc(stored_bytes or 0)
        otel = _recording(_opentelemetry(load))
        if otel:
            attrs = {"gen_ai.tool.name": tool, "s3spill.operation": op, "s3spill.spilled": spilled}
            otel["calls"].add(1, attrs)
            otel["shown"].record(shown_bytes, attrs)
            if op == "spill":
                otel["output"].record(raw_bytes, attrs)
    except Exception as exc:  # noqa: BLE001 - metrics never fail a tool call
        log.warning("telemetry.failed", error=type(exc).__name__)


def observe_events(events: Sequence[Any], *, load: bool = True) -> None:
    """Count many usage events (``UsageEvent``-like) at once; never raises.

    Why not :func:`observe_event` per event: a Prometheus ``inc`` takes a lock and checks
    its labels each time, so a batch is summed per label set first and each counter moves
    once per label set (what a scrape sees is the same). OpenTelemetry's histograms need
    every value, so they still get one ``record`` per event (the call counter one ``add`` per
    attribute set). ``load`` as for :func:`observe_event`.
    """
    if not events:
        return
    try:
        # One tuple and one lookup per event: [calls, shown, output, spilled, stored] per (op, tool).
        sums: dict[tuple[str, str], list[int]] = {}
        otel = _recording(_opentelemetry(load))
        for e in events:
            key = (e.op, e.tool)
            row = sums.get(key)
            if row is None:
                row = sums[key] = [0, 0, 0, 0, 0]
            row[0] += 1
            row[1] += e.shown_bytes
            if e.op == "spill":
                row[2] += e.raw_bytes
                if e.spilled:
                    row[3] += 1
                    row[4] += e.stored_bytes or 0
        if otel:
            _record_otel(otel, events)
        if _prometheus(load):
            _move_counters(sums)
    except Exception as exc:  # noqa: BLE001 - metrics never fail a tool call
        log.warning("telemetry.failed", error=type(exc).__name__)


def _record_otel(otel: dict[str, Any], events: Sequence[Any]) -> None:
    """Each event's sizes into the histograms; the calls counter moved once per attribute set."""
    calls: dict[tuple[str, str, bool], list[Any]] = {}
    shown, output = otel["shown"].record, otel["output"].record
    for e in events:
        key = (e.op, e.tool, e.spilled)
        seen = calls.get(key)
        if seen is None:
            seen = calls[key] = [0, {"gen_ai.tool.name": e.tool, "s3spill.operation": e.op,
                                     "s3spill.spilled": e.spilled}]
        seen[0] += 1
        attrs = seen[1]
        shown(e.shown_bytes, attrs)
        if e.op == "spill":
            output(e.raw_bytes, attrs)
    for count, attrs in calls.values():
        otel["calls"].add(count, attrs)


def _move_counters(sums: dict[tuple[str, str], list[int]]) -> None:
    """Each Prometheus counter moved once per (op, tool) of a batch."""
    for (op, tool), (calls, shown, output, spilled, stored) in sums.items():
        _child("calls", op, tool).inc(calls)
        _child("shown", op, tool).inc(shown)
        if op == "spill":
            _child("output", tool).inc(output)
            if spilled:
                _child("spilled", tool).inc(spilled)
                _child("stored", tool).inc(stored)


def observe_fleet(event: str, label: str, amount: int = 1) -> None:
    """Count one fleet-control event (``quota_refused``, ``capped``, ``capped_bytes``,
    ``credited``) by its label (scope or tool), beside its log event; never raises."""
    try:
        prom = _prometheus()
        if prom and event in prom:
            prom[event].labels(label).inc(amount)
    except Exception as exc:  # noqa: BLE001 - metrics never fail a spill or a GC run
        log.warning("telemetry.failed", error=type(exc).__name__)


@contextlib.contextmanager
def tool_span(op: str, tool: str) -> Iterator[None]:
    """A GenAI ``execute_tool`` span around one spill, read or grep (when OpenTelemetry is there).

    Only if the process has already imported OpenTelemetry: a process that configured it
    (``opentelemetry-instrument``, an SDK provider, an embedding program) has, and one that
    did not has no provider a span could reach, so importing the API for it would only cost
    a one-shot process (a hook, ``s3spill run``) its import time, on every call.
    """
    otel = _opentelemetry(load=False)
    if not otel:
        yield
        return
    with otel["tracer"].start_as_current_span(
            f"execute_tool {tool}", attributes={"gen_ai.operation.name": "execute_tool",
                                               "gen_ai.tool.name": tool, "s3spill.operation": op}):
        yield


def prometheus_exposition() -> tuple[bytes, str] | None:
    """The default registry in the text format, or None without prometheus-client."""
    try:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    except ImportError:
        return None
    _prometheus()
    return generate_latest(), CONTENT_TYPE_LATEST


def serve_metrics_from_env() -> int | None:
    """Serve /metrics on 127.0.0.1:$S3SPILL_METRICS_PORT (a long-lived process calls this)."""
    port = os.environ.get(PORT_ENV)
    if not port:
        return None
    try:
        from prometheus_client import start_http_server
    except ImportError:
        log.warning("telemetry.no_prometheus_client")
        return None
    _prometheus()
    start_http_server(int(port), addr=os.environ.get("S3SPILL_METRICS_ADDR", "127.0.0.1"))
    return int(port)
