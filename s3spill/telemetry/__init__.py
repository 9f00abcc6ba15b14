"""Metrics and spans of long-lived processes: Prometheus always, OpenTelemetry when installed.

Why optional and lazy: the core install has neither client; a process that has
``prometheus-client`` counts into its default registry (exposed by ``s3spill ui`` at
``/metrics``, and by ``mcp``/``mcp-proxy`` on ``$S3SPILL_METRICS_PORT``), and one that has
the OpenTelemetry API gets spans and metrics through whatever provider the standard
``OTEL_*`` configuration (or the embedding program) installed. Names follow the GenAI
semantic conventions where one fits: spans ``execute_tool <tool>`` with
``gen_ai.operation.name`` / ``gen_ai.tool.name``; the rest are ``s3spill.*``.
Nothing here may raise into a tool call.
"""

from s3spill.telemetry.metrics import (
    observe_event,
    observe_events,
    prometheus_exposition,
    serve_metrics_from_env,
    tool_span,
)

__all__ = ["observe_event", "observe_events", "prometheus_exposition", "serve_metrics_from_env", "tool_span"]
