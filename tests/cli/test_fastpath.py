"""The hook's "nothing to do" path: decided from the payload alone, with no heavy import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3spill.cli.fastpath import HOOK_FLOOR_BYTES, needs_work

ROOT = Path(__file__).resolve().parents[2]

SMALL = json.dumps({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                    "tool_response": {"stdout": "hi\n", "stderr": "", "interrupted": False}}).encode()
Probe = Callable[..., dict[str, Any]]


@pytest.mark.parametrize("args", [["hook", "claude-code"], ["hook", "gemini-cli"],
                                  ["--store", "/nowhere", "--debug", "hook", "claude-code",
                                   "--server", "files", "--session", "x"]])
def test_a_small_result_is_answered_without_the_parser_store_pydantic_or_logging(
        probe: Probe, args: list[str]) -> None:
    """A 200-byte tool result exits 0 printing nothing, and none of the heavy layers is imported."""
    got = probe(args, SMALL)
    assert got["code"] == 0 and got["printed"] == ""
    assert got["heavy"] == [] and not {"logging", "argparse", "typing"} & set(got["modules"])


def test_a_payload_over_the_floor_reaches_the_full_path_whole(probe: Probe) -> None:
    """Bytes the fast path read are handed on: a big Bash result is spilled and its pointer
    names an artifact of exactly the output's size."""
    stdout = "".join(f"line {i} of a long build log\n" for i in range(20_000))
    payload = json.dumps({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                          "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}})
    got = probe(["hook", "claude-code"], payload.encode())
    text = json.loads(got["printed"])["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert f"{len(stdout.encode())} bytes, 20000 lines" in text and "source_id=" in text


def test_flags_the_fast_path_does_not_know_go_to_the_full_parser() -> None:
    """An invalid --server is still the parser's usage error (exit 2), even on a small payload."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "s3spill", "hook", "claude-code", "--server", "my files"],
                          input=SMALL, capture_output=True, env=env)
    assert proc.returncode == 2 and b"--server" in proc.stderr


@pytest.mark.parametrize(("head", "complete", "work"), [
    (SMALL, True, False),
    (SMALL, False, True),  # more is coming: size unknown
    (b"x" * (HOOK_FLOOR_BYTES + 1), True, True),
    (SMALL.replace(b'"stderr"', b'"persistedOutputPath": "/tmp/o.txt", "stderr"'), True, True),
    (SMALL.replace(b"PostToolUse", b"PreToolUse"), True, True),
    (SMALL.replace(b"PostToolUse", b"PostToolUseFailure"), True, True),
    (b'{"tool_response": "Output has been saved to /tmp/x.txt"}', True, True),
])
def test_needs_work_is_false_only_when_certain(head: bytes, complete: bool, work: bool) -> None:
    """Size over the floor, a saved-file reference, or an input-driven event all mean work."""
    assert needs_work(head, complete) is work
