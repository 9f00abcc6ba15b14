"""Claude Code's Bash modes through the wrapper: timeout, background, a hook wired twice, failures."""

from __future__ import annotations

import re
from typing import Any

from tests.harnesses.conftest import ClaudeCode, s3spill_cmd
from tests.harnesses.model_api import Turn, result_text, text, tool_call


def _read_task_output(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Read of the output file Claude Code named when it moved a command to the background."""
    found = re.findall(r"written to: (\S+?\.output)", str(requests[-1]["messages"]))
    return [{"type": "tool_use", "id": f"toolu_{len(requests):04d}", "name": "Read",
             "input": {"file_path": found[0]}}]


def test_a_timeout_moves_the_command_to_the_background_as_without_the_wrapper(claude: ClaudeCode) -> None:
    """``timeout`` is kept: at 2 s Claude Code moves the command to the background, as it
    does unwrapped; once it completes, its output file holds the command's output (small,
    so as it is) — what the model reads there."""
    turns: list[Turn] = [tool_call("Bash", {"command": "seq 1 3; sleep 4; echo finished", "timeout": 2000}),
                         text("waiting"), _read_task_output, text("done")]
    bare = claude.run(turns).results()
    claude.use_s3spill()
    wrapped = claude.run(turns).results()
    for results in (bare, wrapped):
        moved = "did not complete within its 2s timeout and was moved to the background"
        assert moved in result_text(results[0])
        read = result_text(results[1])
        assert re.search(r"1\t1\n\s*2\t2\n\s*3\t3\n\s*4\tfinished", read), read


def test_run_in_background_is_left_to_claude_code(claude: ClaudeCode) -> None:
    """A ``run_in_background`` command is not rewritten (its output is read while it runs):
    the notification names the command as the model wrote it."""
    claude.use_s3spill()
    run = claude.run([tool_call("Bash", {"command": "echo bg-start; sleep 1", "run_in_background": True}),
                      text("waiting"), text("done")])
    assert "Command running in background with ID" in result_text(run.results()[0])
    notified = str(run.script.requests[-1]["messages"][-1])
    assert 'Background command "echo bg-start; sleep 1" completed' in notified
    assert "__s3spill" not in notified


def test_the_hook_wired_twice_wraps_once(claude: ClaudeCode) -> None:
    """Two PreToolUse entries running our hook: the output comes once, one pointer for a big one."""
    claude.use_s3spill()
    claude.hooks["PreToolUse"] = claude.hooks["PreToolUse"] * 2
    run = claude.run([tool_call("Bash", {"command": "echo once"}),
                      tool_call("Bash", {"command": "seq 1 200000"}), text("done")])
    small, big = (result_text(r) for r in run.results())
    assert small == "once"
    assert big.count("[s3spill] Full output of Bash") == 1 and big.startswith("1\n2\n")


def test_a_broken_store_leaves_claude_codes_own_result(claude: ClaudeCode) -> None:
    """The wrapper's ``run`` and the PostToolUse hook both fail (a store URL they cannot
    open): the model gets what it gets with no hook — the small output as it is, and Claude
    Code's own persisted-output preview for a big one — and every command still runs."""
    turns = [tool_call("Bash", {"command": "echo small; exit 3"}),
             tool_call("Bash", {"command": "seq 1 1000000"}), text("done")]
    bare = claude.run(turns).results()
    claude.store_url = "ftp://nowhere/spill"
    claude.use_s3spill(mcp=False)
    broken = claude.run(turns).results()
    assert result_text(broken[0]) == result_text(bare[0]) == "Exit code 3\nsmall"
    assert broken[0].get("is_error") is True
    assert "<persisted-output>" in result_text(broken[1]) and "999999" not in result_text(broken[1])[:30_000]


def test_a_hook_that_times_out_leaves_the_result_in_place(claude: ClaudeCode) -> None:
    """A PreToolUse and a PostToolUse hook that take longer than their ``timeout``: Claude
    Code gives up on them, and the command runs and reports as with no hook."""
    slow = {"type": "command", "command": "sleep 5; " + s3spill_cmd("--store", claude.store_url, "hook",
                                                                  "claude-code"), "timeout": 1}
    claude.hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [slow]}],
                    "PostToolUse": [{"matcher": "*", "hooks": [slow]}]}
    run = claude.run([tool_call("Bash", {"command": "seq 1 3"}), text("done")])
    assert result_text(run.results()[0]) == "1\n2\n3"
