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

structlog is imported on first use, not at import: a short-lived process (``s3spill
read``) whose debug and info records are filtered out anyway never pays its ~50-100 ms
import. A logger checks ``isEnabledFor`` first and only then builds the structlog
wrapper; the CLI's formatter imports structlog when it renders its first line.

Log calls pass operation, key, byte counts and durations — never credentials and
never object bodies; nothing here redacts, so the rule is kept at the call sites.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

ROOT = "s3spill"
#: The numeric levels (stdlib's values) of each logging method, known without importing it.
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "exception": 40, "critical": 50}
_NAMED = {"NOTSET": 0, "DEBUG": 10, "INFO": 20, "WARN": 30, "WARNING": 30, "ERROR": 40, "FATAL": 50,
          "CRITICAL": 50}
#: The level of :mod:`logging`'s root logger until someone configures it.
_WARNING = 30
#: What :func:`configure` was asked for while :mod:`logging` was not loaded yet: (level, json).
_pending: tuple[int, bool] | None = None
_ready = False
_setup = threading.Lock()


def _stdlib() -> Any:
    """:mod:`logging`, with our root's NullHandler and any deferred :func:`configure` applied.

    Why deferred: a short-lived CLI process (``s3spill read``) whose records are all below
    its level never needs :mod:`logging` (~8 ms of such a process, issue 35). Every record
    of ours goes through :class:`_LazyLogger`, which comes here before emitting one, so a
    deferred handler is in place before the first record that could reach it.
    """
    global _ready, _pending
    import logging

    if _ready and _pending is None:
        return logging
    with _setup:  # two threads' first records install one handler, not two
        if not _ready:
            _ready = True
            logging.getLogger(ROOT).addHandler(logging.NullHandler())
        if _pending is not None:
            level, json = _pending
            _pending = None
            _install(logging, level, json)
    return logging


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


def _formatter(json: bool) -> logging.Formatter:
    """structlog's JSON or console rendering of a record, for the CLI's handler."""
    import logging
    from datetime import UTC, datetime

    class _Formatter(logging.Formatter):
        def __init__(self) -> None:
            super().__init__()
            self._render: Any = None

        def format(self, record: logging.LogRecord) -> str:
            if self._render is None:
                import structlog

                self._render = (structlog.processors.JSONRenderer() if json
                                else structlog.dev.ConsoleRenderer())
            fields = getattr(record, "s3spill", None)
            event: dict[str, Any] = {"event": getattr(record, "s3spill_event", None) or record.getMessage()}
            event.update(fields if isinstance(fields, dict) else {})
            event["level"] = record.levelname.lower()
            event["logger"] = record.name
            event["timestamp"] = datetime.fromtimestamp(record.created, UTC).isoformat()
            if record.exc_info:
                event["exception"] = self.formatException(record.exc_info)
            return str(self._render(None, record.levelname.lower(), event))

    return _Formatter()


_handler: logging.Handler | None = None


def configure(*, level: str = "WARNING", json: bool | None = None) -> None:
    """Send s3spill's records to stderr (the CLI calls this; libraries and harnesses don't).

    Idempotent: a second call replaces the handler the first one added. When :mod:`logging`
    is not loaded yet, the handler is installed with the first record that is not dropped
    (see :func:`_stdlib`): a process that logs nothing at its level never loads it.
    """
    global _pending
    if json is None:
        json = not sys.stderr.isatty()
    number = _NAMED[level.upper()]
    if "logging" not in sys.modules:
        _pending = (number, json)
        return
    _pending = None
    _install(_stdlib(), number, json)


def _install(logging: Any, level: int, json: bool) -> None:
    global _handler
    root = logging.getLogger(ROOT)
    if _handler is not None:
        root.removeHandler(_handler)
    _handler = logging.StreamHandler(_CurrentStderr())
    _handler.setFormatter(_formatter(json))
    root.addHandler(_handler)
    root.setLevel(level)
    root.propagate = False


class _LazyLogger:
    """A key/value logger that builds its structlog wrapper only when a record is enabled."""

    __slots__ = ("_logger", "_name", "_std")

    def __init__(self, name: str) -> None:
        self._name = name
        self._std: Any = None
        self._logger: Any = None

    @property
    def _stdlib(self) -> logging.Logger:
        if self._std is None:
            self._std = _stdlib().getLogger(self._name)
        return self._std  # type: ignore[no-any-return]

    def __getattr__(self, method: str) -> Any:
        level = _LEVELS.get(method)
        if level is not None:
            if "logging" not in sys.modules and level < (_WARNING if _pending is None else _pending[0]):
                # Nothing can show it: no one configured logging (its root level is WARNING),
                # or the CLI asked for a level above it.
                return _drop
            if not self._stdlib.isEnabledFor(level):
                return _drop
        if self._logger is None:
            import structlog

            self._logger = structlog.wrap_logger(
                self._stdlib,
                processors=[structlog.stdlib.filter_by_level, _to_record],
                wrapper_class=structlog.stdlib.BoundLogger,
                context_class=dict,
                cache_logger_on_first_use=True,
            )
        return getattr(self._logger, method)


def _drop(*args: Any, **kwargs: Any) -> None:
    return None


def get_logger(name: str) -> Any:
    """A key/value logger over ``logging.getLogger(name)``; touches no global configuration."""
    return _LazyLogger(name)
