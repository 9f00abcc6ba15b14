"""The Claude Code Bash wrapper's decisions, and the rewritten command run by a real bash.

The shell is driven the way Claude Code 2.1.332 drives it (``bash -c '… eval 'CMD' && pwd
-P >| CWDFILE'``); tests/harnesses runs the same through the real Claude Code.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from s3spill.adapters.claude_bash import capture_args, is_wrapped, pre_answer, pre_tool_use, wrap
from s3spill.testing import child_env


def _payload(**tool_input: Any) -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash",
            "tool_use_id": "toolu_1", "tool_input": tool_input}


CAPTURE = ["python3", "file:///nowhere", "s", "s3spill"]


def test_a_bash_call_is_rewritten_once_and_keeps_its_other_fields() -> None:
    """The answer replaces only ``command``; a rewritten command is never rewritten again.
    It says nothing of permissions (in Claude Code "allow" would skip the user's prompt)."""
    out = pre_tool_use(_payload(command="make test", timeout=600000, description="tests"), CAPTURE)
    assert out is not None
    updated = out["hookSpecificOutput"]["updatedInput"]
    assert set(out["hookSpecificOutput"]) == {"hookEventName", "updatedInput"}
    assert out["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert updated["timeout"] == 600000 and updated["description"] == "tests"
    assert is_wrapped(updated["command"]) and "'make test'" in updated["command"]
    assert pre_tool_use(_payload(command=updated["command"]), CAPTURE) is None


@pytest.mark.parametrize("payload", [
    _payload(command="sleep 100", run_in_background=True),
    {**_payload(command="ls"), "tool_name": "Read"},
    {**_payload(command="ls"), "hook_event_name": "PostToolUse"},
    _payload(command="   "),
    _payload(command=["ls"]),
    {**_payload(), "tool_input": "ls"},
])
def test_what_is_not_a_foreground_bash_command_is_left_alone(payload: dict[str, Any]) -> None:
    """Background commands (read while they run), other tools and odd inputs get no answer."""
    assert pre_tool_use(payload, CAPTURE) is None


@pytest.mark.parametrize("raw", [b"{not json", b"\xff\xfe{}", json.dumps([1]).encode()])
def test_an_unreadable_payload_is_no_pre_tool_use(raw: bytes) -> None:
    assert pre_answer(raw, lambda p: CAPTURE) is None


def _claude_shell(command: str, cwd: Path) -> tuple[bytes, int, str]:
    """``command`` as Claude Code's Bash runs it: output, exit status, the cwd it records."""
    cwd_file = cwd / "cwd"
    full = f"eval {shlex.quote(command)} && pwd -P >| {shlex.quote(str(cwd_file))}"
    proc = subprocess.run(["bash", "-c", full], cwd=cwd, env=child_env({}), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60, check=False)
    recorded = cwd_file.read_text().strip() if cwd_file.exists() else ""
    cwd_file.unlink(missing_ok=True)
    return proc.stdout, proc.returncode, recorded


COMMANDS = [
    "echo \"double 'single' $((1+2))\" 'single \"double\"' \\$x",
    "cat <<'EOF'\nliteral $HOME `x`\nEOF",
    "cat <<EOF | tr a-z A-Z\nsum $((6*7))\nEOF",
    "mkdir -p a/b && cd a/b && pwd",
    "echo out; echo err >&2; exit 7",
    "f() { return 4; }; f",
    "printf 'no newline'",
    "sleep 0.1 & wait; echo waited",
    "set -- x y; echo $# $1",
    "seq 1 100000 | tail -1",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_rewritten_command_runs_exactly_as_the_original(command: str, tmp_path: Path) -> None:
    """Same bytes out, same exit status, same working directory recorded afterwards."""
    (tmp_path / "bare").mkdir()
    (tmp_path / "wrapped").mkdir()
    capture = capture_args(sys.executable, (tmp_path / "store").as_uri(), "s", "s3spill", None)
    bare = _claude_shell(command, tmp_path / "bare")
    wrapped = _claude_shell(wrap(command, capture), tmp_path / "wrapped")
    assert wrapped[0].replace(b"/wrapped", b"/bare") == bare[0] and wrapped[1] == bare[1]
    assert wrapped[2].replace("/wrapped", "/bare") == bare[2]


def test_a_big_output_is_spilled_and_a_dead_capture_gives_the_raw_output(tmp_path: Path) -> None:
    """200,000 lines become a pointer naming the MCP tool; with a capture that cannot start
    (no such interpreter) the command still runs and its whole output comes through raw."""
    command = "seq 1 200000; exit 3"
    capture = capture_args(sys.executable, (tmp_path / "store").as_uri(), "s", "s3spill", "toolu_9")
    out, status, _ = _claude_shell(wrap(command, capture), tmp_path)
    assert status == 3 and b"mcp__s3spill__read_artifact(source_id" in out and len(out) < 30_000
    assert b"200000\n" in out and b"exit code 3" in out
    broken = capture_args(str(tmp_path / "no-python"), (tmp_path / "store").as_uri(), "s", "s3spill", None)
    out, status, _ = _claude_shell(wrap(command, broken), tmp_path)
    assert status == 3 and out == subprocess.run(["seq", "1", "200000"], capture_output=True).stdout


def test_gemini_before_tool_rewrites_run_shell_command_once_and_leaves_background_alone() -> None:
    """Gemini CLI's BeforeTool answer overrides only ``command`` in ``tool_input``; a
    rewritten command, a background one and other tools get no answer."""
    from s3spill.adapters.claude_bash import before_tool

    payload = {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
               "tool_input": {"command": "make test", "dir_path": "src"}}
    capture = capture_args("python3", "file:///s", "s", "s3spill", None, "gemini-cli", "run_shell_command")
    out = before_tool(payload, capture)
    assert out is not None and out["hookSpecificOutput"]["hookEventName"] == "BeforeTool"
    command = out["hookSpecificOutput"]["tool_input"]["command"]
    assert set(out["hookSpecificOutput"]["tool_input"]) == {"command"} and is_wrapped(command)
    assert " gemini-cli run_shell_command;" in command
    assert before_tool({**payload, "tool_input": {"command": command}}, capture) is None
    background = {"command": "sleep 9", "is_background": True}
    assert before_tool({**payload, "tool_input": background}, capture) is None
    assert before_tool({**payload, "tool_name": "read_file"}, capture) is None
