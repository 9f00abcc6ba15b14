"""The hook's "nothing to do" path: decided from the payload alone, with no heavy import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.cli.fastpath import HOOK_FLOOR_BYTES, needs_work

ROOT = Path(__file__).resolve().parents[2]
#: Runs the CLI's main() as the console script does, then reports what it imported.
PROBE = ("import json, sys\nfrom s3spill.cli import main\ncode = main(sys.argv[1:])\n"
         "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))")
HEAVY = ("boto3", "botocore", "pydantic", "structlog", "s3spill.store", "s3spill.spill",
         "s3spill.artifacts", "s3spill.adapters")
SMALL = json.dumps({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                    "tool_response": {"stdout": "hi\n", "stderr": "", "interrupted": False}}).encode()


def _probe(args: list[str], payload: bytes, tmp_path: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    env.update(PYTHONPATH=str(ROOT), S3SPILL_STORE=str(tmp_path / "store"))
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], input=payload, capture_output=True,
                          env=env, check=True)
    lines = proc.stdout.decode().splitlines()
    result: dict[str, object] = json.loads(lines[-1])
    result["printed"] = "\n".join(lines[:-1])
    return result


@pytest.mark.parametrize("args", [["hook", "claude-code"], ["hook", "gemini-cli"],
                                  ["--store", "/nowhere", "--debug", "hook", "claude-code",
                                   "--server", "files", "--session", "x"]])
def test_a_small_result_is_answered_without_the_store_pydantic_or_logging(
        tmp_path: Path, args: list[str]) -> None:
    """A 200-byte tool result exits 0 printing nothing, and none of the heavy layers is imported."""
    got = _probe(args, SMALL, tmp_path)
    assert got["code"] == 0 and got["printed"] == ""
    modules = [str(m) for m in got["modules"]]  # type: ignore[attr-defined]
    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == [] and "logging" not in modules


def test_a_payload_over_the_floor_reaches_the_full_path_whole(tmp_path: Path) -> None:
    """Bytes the fast path read are handed on: a big Bash result is spilled and its pointer
    names an artifact of exactly the output's size."""
    stdout = "".join(f"line {i} of a long build log\n" for i in range(20_000))
    payload = json.dumps({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                          "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}})
    got = _probe(["hook", "claude-code"], payload.encode(), tmp_path)
    answer = json.loads(str(got["printed"]))
    text = answer["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert f"{len(stdout.encode())} bytes, 20000 lines" in text and "source_id=" in text


def test_flags_the_fast_path_does_not_know_go_to_the_full_parser(tmp_path: Path) -> None:
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
