"""structlog set-up: JSON lines off a TTY, readable lines on one.

Log calls pass operation, key, byte counts and durations — never credentials and
never object bodies; nothing here redacts, so the rule is kept at the call sites.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

_configured = False


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


def configure(*, level: str = "WARNING", json: bool | None = None) -> None:
    """Configure structlog once for the process (the CLI calls this; libraries don't)."""
    global _configured
    if json is None:
        json = not sys.stderr.isatty()
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    _configured = True


def get_logger(name: str) -> Any:
    # structlog's unconfigured default prints every level to stdout, which would mix
    # debug lines into a command's output; default to warnings on stderr instead.
    if not _configured and not structlog.is_configured():
        configure()
    return structlog.get_logger(name)
