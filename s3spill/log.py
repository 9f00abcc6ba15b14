"""structlog set-up: JSON lines off a TTY, readable lines on one.

Log calls pass operation, key, byte counts and durations — never credentials and
never object bodies; nothing here redacts, so the rule is kept at the call sites.

structlog is imported on first use, not at import: a short-lived process (``s3spill
read``) whose debug and info lines are filtered out anyway never pays its ~50-100 ms
import. Until someone imports or configures structlog, calls below the default level
(WARNING) are dropped without it; once it is loaded, every call goes to it unchanged.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

_configured = False  # configure() was called
_applied = False  # ...and structlog has been configured accordingly
_level = logging.WARNING
_json: bool | None = None
#: Methods that are below the default WARNING level (dropped while structlog is unloaded).
_QUIET = frozenset({"debug", "info", "adebug", "ainfo"})


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
    """Configure structlog once for the process (the CLI calls this; libraries don't).

    Applied at once when structlog is loaded or the level asks for debug/info lines;
    otherwise when the first warning is logged (often never, in a short command).
    """
    global _configured, _level, _json
    _level = getattr(logging, level.upper())
    _json = json
    _configured = True
    if "structlog" in sys.modules or _level < logging.WARNING:
        _apply()


def _apply() -> None:
    global _applied
    import structlog

    json = _json if _json is not None else not sys.stderr.isatty()
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_level),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    _applied = True


def _noop(*_: Any, **__: Any) -> None:
    return None


class _LazyLogger:
    """A named logger that loads structlog only when a call could be shown."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._real: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._real is None:
            if method in _QUIET and _level >= logging.WARNING and "structlog" not in sys.modules:
                return _noop
            self._real = _structlog_logger(self._name)
        return getattr(self._real, method)


def _structlog_logger(name: str) -> Any:
    import structlog

    # structlog's unconfigured default prints every level to stdout, which would mix
    # debug lines into a command's output; default to warnings on stderr instead.
    if _configured and not _applied:
        _apply()
    elif not _configured and not structlog.is_configured():
        configure()
    return structlog.get_logger(name)


def get_logger(name: str) -> Any:
    return _LazyLogger(name)
