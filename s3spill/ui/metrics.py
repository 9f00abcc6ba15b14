"""The ``/metrics`` body of the web view (Prometheus text format), when prometheus-client is installed."""

from __future__ import annotations

from collections.abc import Callable

from s3spill.telemetry import prometheus_exposition

__all__ = ["ui_metrics"]


def ui_metrics() -> Callable[[], tuple[bytes, str]] | None:
    if prometheus_exposition() is None:
        return None

    def body() -> tuple[bytes, str]:
        found = prometheus_exposition()
        assert found is not None
        return found

    return body
