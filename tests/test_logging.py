"""Library logging goes through stdlib ``logging``; only the CLI configures output."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.context.policy import SpillPolicy
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore
from s3spill.testing import Fault, FaultyStore


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_importing_the_library_configures_nothing_globally() -> None:
    """After `import s3spill`, structlog is unconfigured and the root logger has no handler of ours."""
    code = ("import logging, structlog, s3spill, s3spill.gc.apply, s3spill.spill.spiller; "
            "print(structlog.is_configured(), len(logging.getLogger().handlers))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=60).stdout.split()
    assert out == ["False", "0"]


def test_a_degraded_spill_reaches_the_applications_logging_handler(tmp_path: Path) -> None:
    """The Spiller's warning is a stdlib record named after its module, with its fields attached."""
    handler = _Collect()
    logger = logging.getLogger("s3spill")
    logger.addHandler(handler)
    try:
        store = FaultyStore(LocalStore(tmp_path / "store"), [Fault("*", "unavailable", times=10**9)])
        spiller = Spiller(store, "s-log", SpillPolicy(store_deadline=2.0), journal=None)
        result = spiller.externalize(b"x" * 200_000, "bash")
    finally:
        logger.removeHandler(handler)
    assert result.degraded_reason
    [record] = [r for r in handler.records if getattr(r, "s3spill_event", "") == "spill.degraded"]
    assert record.levelno == logging.WARNING
    assert record.name.startswith("s3spill.spill")
    assert record.getMessage().startswith("spill.degraded ")
    fields = record.s3spill  # type: ignore[attr-defined]
    assert fields["tool"] == "bash" and "reason" in fields


def test_the_cli_renders_json_lines_on_stderr(tmp_path: Path) -> None:
    """Off a TTY the CLI's records are JSON objects with event, level and logger."""
    proc = subprocess.run(
        [sys.executable, "-m", "s3spill", "--log-level", "debug", "--store", f"file://{tmp_path}/s",
         "--session", "s-cli", "spill", "--tool", "bash"],
        input="hello\n" * 10, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    assert lines, proc.stderr
    assert all({"event", "level", "logger", "timestamp"} <= set(line) for line in lines)
    assert any(line["logger"].startswith("s3spill.") for line in lines)


@pytest.mark.parametrize("level", ["warning", "info"])
def test_configure_is_idempotent(level: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Configuring twice leaves one handler: each record is printed once."""
    from s3spill import log

    try:
        log.configure(level=level, json=True)
        log.configure(level=level, json=True)
        log.get_logger("s3spill.test").warning("once", n=1)
        err = capsys.readouterr().err
    finally:
        root = logging.getLogger("s3spill")
        for h in [h for h in root.handlers if not isinstance(h, logging.NullHandler)]:
            root.removeHandler(h)
        root.propagate = True
        root.setLevel(logging.NOTSET)
    assert [json.loads(line)["event"] for line in err.splitlines()] == ["once"]


def test_logging_loads_with_the_first_record_that_can_show() -> None:
    """Below the level (WARNING unconfigured, or the CLI's), a record loads no `logging`; the first
    record at the level loads it and reaches the handler `configure` asked for."""
    code = ("import sys\nfrom s3spill.log import configure, get_logger\nlog = get_logger('s3spill.t')\n"
            "log.debug('quiet'); log.info('quiet')\nassert 'logging' not in sys.modules\n"
            "configure(level='ERROR', json=True)\nlog.warning('quiet')\nassert 'logging' not in sys.modules\n"
            "log.error('shown', n=1)\nassert 'logging' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    [line] = [json.loads(x) for x in proc.stderr.splitlines()]
    assert line["event"] == "shown" and line["n"] == 1 and line["level"] == "error"
