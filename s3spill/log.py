"""Logging: the library speaks through stdlib :mod:`logging`; only the CLI configures output.

Why stdlib underneath: an application that embeds s3spill (an agent harness, a web
server) has its own ``logging`` set-up, and our records must reach its handlers with its
levels — so the library never configures structlog or any handler globally. Each
module's logger is a structlog logger *wrapped around* ``logging.getLogger(name)`` with
its own processor chain: events keep their key/value style at the call sites, records
are named ``s3spill.<package>.<module>``, the message reads ``event key=value ...`` in any
handler, and the fields are on the record as ``record.s3spill`` (a dict) for structured
handlers. :func:`configure` (called by the CLI and so by the MCP server it starts) adds
one handler to the ``s3spill`` logger that renders JSON lines off a TTY and readable lines
on one.

Log calls pass operation, key, byte counts and durations — never credentials and
never object bodies; nothing here redacts, so the rule is kept at the call sites.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any

import structlog

ROOT = "s3spill"
logging.getLogger(ROOT).addHandler(logging.NullHandler())


class _CurrentStderr:
    """Whatever ``sys.stderr`` is at write time, not at configure time.

    Binding the stream once breaks every later log call after a test harness (or an
    embedding application) swaps and closes the stream it had when the CLI configured
    logging — ``ValueError: I/O operation on closed file`` deep inside GC.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _to_record(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> dict[str, Any]:
    """The last processor: stdlib ``msg`` plus the fields as ``record.s3spill``."""
    event = str(event_dict.pop("event", ""))
    exc_info = event_dict.pop("exc_info", None)
    fields = dict(event_dict)
    text = " ".join([event, *(f"{k}={v}" for k, v in fields.items() if v is not None)])
    out: dict[str, Any] = {"msg": text, "extra": {"s3spill": fields, "s3spill_event": event}}
    if exc_info:
        out["exc_info"] = exc_info
    return out


class _Formatter(logging.Formatter):
    """structlog's JSON or console rendering of a record, for the CLI's handler."""

    def __init__(self, json: bool) -> None:
        super().__init__()
        self._render: Any = (structlog.processors.JSONRenderer() if json
                             else structlog.dev.ConsoleRenderer())

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "s3spill", None)
        event: dict[str, Any] = {"event": getattr(record, "s3spill_event", None) or record.getMessage()}
        event.update(fields if isinstance(fields, dict) else {})
        event["level"] = record.levelname.lower()
        event["logger"] = record.name
        event["timestamp"] = datetime.fromtimestamp(record.created, UTC).isoformat()
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return str(self._render(None, record.levelname.lower(), event))


_handler: logging.Handler | None = None


def configure(*, level: str = "WARNING", json: bool | None = None) -> None:
    """Send s3spill's records to stderr (the CLI calls this; libraries and harnesses don't).

    Idempotent: a second call replaces the handler the first one added.
    """
    global _handler
    if json is None:
        json = not sys.stderr.isatty()
    root = logging.getLogger(ROOT)
    if _handler is not None:
        root.removeHandler(_handler)
    _handler = logging.StreamHandler(_CurrentStderr())
    _handler.setFormatter(_Formatter(json))
    root.addHandler(_handler)
    root.setLevel(getattr(logging, level.upper()))
    root.propagate = False


def get_logger(name: str) -> Any:
    """A key/value logger over ``logging.getLogger(name)``; touches no global configuration."""
    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=[structlog.stdlib.filter_by_level, _to_record],
        wrapper_class=structlog.stdlib.BoundLogger,
        context_class=dict,
        cache_logger_on_first_use=True,
    )
