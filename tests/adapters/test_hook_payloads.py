"""``s3spill hook`` on ordinary bad payloads: one log line, never a traceback (issue 30)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.testing import child_env

BAD = {
    "100 KB of non-JSON": b"x" * 100_000,
    "invalid UTF-8": b'{"tool_response": "' + b"\xff\xfe" * 20_000 + b'"}',
    "a UTF-16 BOM": b"\xff\xfe" + b'{"tool_response": "' + b"a" * 30_000 + b'"}',
}


@pytest.mark.parametrize("raw", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize("harness", ["claude-code", "gemini-cli"])
def test_a_bad_payload_is_one_line_on_stderr_and_no_answer(raw: bytes, harness: str, tmp_path: Path) -> None:
    """docs/configuration.md: an expected failure is one line, never a traceback; the hook
    prints nothing and exits 0, so the harness keeps the tool's result."""
    argv = [sys.executable, "-m", "s3spill", "--store", (tmp_path / "s").as_uri(), "hook", harness]
    proc = subprocess.run(argv, input=raw, capture_output=True, env=child_env({}), timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout == b""
    err = proc.stderr.decode()
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
