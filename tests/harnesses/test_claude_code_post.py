"""Claude Code's PostToolUse route, as the model receives it: what Claude Code cut or saved itself."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from tests.harnesses.conftest import ClaudeCode
from tests.harnesses.model_api import Turn, follow_pointer, result_text, text, tool_call

READ = "mcp__s3spill__read_artifact"
BIG_MCP = str(Path(__file__).with_name("big_mcp.py"))


def page_text(block: dict[str, Any]) -> str:
    shown = result_text(block)
    return str(json.loads(shown)["text"]) if shown.startswith("{") else shown


def _notes(request: dict[str, Any]) -> str:
    """The text of the system notes Claude Code put beside the last tool result."""
    return json.dumps([m for m in request["messages"] if m.get("role") == "system"])


def test_a_bash_output_claude_code_persisted_is_stored_whole_without_the_wrapper(claude: ClaudeCode) -> None:
    """Without the PreToolUse wrapper, ``seq 1 1000000`` reaches PostToolUse as 30,000
    characters plus the file Claude Code saved: the file is stored whole and the model gets
    our preview (not the ``<persisted-output>`` one); the pointer pages line 999,999."""
    claude.use_s3spill(pre=False)
    run = claude.run([tool_call("Bash", {"command": "seq 1 1000000"}),
                      follow_pointer(READ, offset=999_998, limit=1), text("done")])
    first, page = run.results()
    shown = result_text(first)
    assert "<persisted-output>" not in shown and "6888896 bytes" in shown and len(shown) < 30_000
    assert "999999\t999999\n" in page_text(page)


def test_a_1_mb_mcp_result_claude_code_saved_is_stored_and_paged(claude: ClaudeCode) -> None:
    """An MCP tool's 1 MB result, which Claude Code replaces by "Output has been saved to
    …": the model gets our preview and a pointer instead, and row 25,000 through it."""
    claude.use_s3spill(pre=False)
    claude.mcp["big"] = {"command": sys.executable, "args": [BIG_MCP], "env": {"BIG_MCP_BYTES": "1000000"}}
    run = claude.run([tool_call("mcp__big__dump", {}), follow_pointer(READ, offset=25_000, limit=1),
                      text("done")])
    first, page = run.results()
    shown = result_text(first)
    assert "exceeds maximum allowed tokens" not in shown and "1000000 bytes" in shown
    assert f"{READ}(source_id" in shown and len(shown) < 30_000
    assert "row 0025000 value=175000" in page_text(page)


def test_a_small_mcp_result_and_a_small_read_pass_untouched(claude: ClaudeCode) -> None:
    """A 200-byte MCP result and a short file read reach the model as with no hook."""
    (claude.project / "small.txt").write_text("alpha\nbeta\n")
    claude.mcp["big"] = {"command": sys.executable, "args": [BIG_MCP], "env": {"BIG_MCP_BYTES": "200"}}
    turns: list[Turn] = [tool_call("mcp__big__dump", {}),
                         tool_call("Read", {"file_path": str(claude.project / "small.txt")}), text("done")]
    bare = [result_text(r) for r in claude.run(turns).results()]
    claude.use_s3spill()
    hooked = [result_text(r) for r in claude.run(turns).results()]
    assert hooked == bare and len(bare[0]) == 200 and bare[1].startswith("1\talpha")


def test_a_big_read_keeps_claude_codes_line_numbers(claude: ClaudeCode) -> None:
    """A 3,000-line read from line 2,000 of a file (150,000 characters): the lines shown are
    numbered as in the file (line 2,398 shows as 2398), the last ones too, in the note
    beside the result, with the pointer; no number is off."""
    lines = [f"line {n:05d} " + "x" * 48 for n in range(1, 6001)]
    (claude.project / "big.txt").write_text("\n".join(lines) + "\n")
    claude.use_s3spill()
    run = claude.run([tool_call("Read", {"file_path": str(claude.project / "big.txt"), "offset": 2000,
                                         "limit": 3000}), text("done")])
    shown = result_text(run.results()[0])
    numbered = re.findall(r"^\s*(\d+)\tline (\d+) ", shown, re.M)
    assert numbered and numbered[0] == ("2000", "02000") and all(int(a) == int(b) for a, b in numbered)
    notes = _notes(run.script.requests[-1])
    tail = re.findall(r"(\d+)\\tline (\d+) ", notes)
    assert tail and tail[-1] == ("4999", "04999") and all(int(a) == int(b) for a, b in tail)
    assert f"{READ}(source_id" in notes


def test_a_pointer_written_before_clear_and_continue_reads_after(claude: ClaudeCode) -> None:
    """Claude Code changes the hook's session on ``/clear`` and starts a new MCP server
    session on ``--continue``; the pointer written before each still pages from the
    ``s3spill mcp`` of the process after it (both sides use the project's session)."""
    claude.use_s3spill()
    found: list[str] = []

    def read_earlier(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not found:
            found.extend(re.findall(r'artifact:[0-9a-f]{32}:[^"\\\\\s]+', json.dumps(requests[0:2])))
        return [{"type": "tool_use", "id": f"toolu_{len(requests):04d}", "name": READ,
                 "input": {"source_id": found[0], "offset": 123_455, "limit": 1}}]

    script = claude.conversation(["first", "/clear", "second"], [
        tool_call("Bash", {"command": "seq 1 300000"}), text("stored"), read_earlier, text("read")])
    after_clear = script.tool_results()[-1]
    assert "123456\t123456\n" in page_text(after_clear), result_text(after_clear)[:500]
    assert len(script.requests[2]["messages"]) <= 2  # the history is gone after /clear
    run = claude.run([read_earlier, text("done")], "--continue")
    assert "123456\t123456\n" in page_text(run.results()[-1])


def test_without_the_wrapper_a_failing_command_keeps_only_claude_codes_head(claude: ClaudeCode) -> None:
    """No PostToolUse route exists for a failing command: Claude Code sends the hook
    (PostToolUseFailure) and the model a ~10,000-character head of a 5 MB log, keeps no file,
    and the failure at the end is lost. The measured reason the wrapper exists."""
    claude.use_s3spill(pre=False)
    build = ("python3 -c 'import sys\nfor i in range(120000):"
             " print(f\"[{i:07d}] compiling module_{i}.c ... ok\")'; echo 'error: 3 tests FAILED'; exit 1")
    run = claude.run([tool_call("Bash", {"command": build}), text("done")])
    first = run.results()[0]
    shown = result_text(first)
    assert first.get("is_error") is True and "source_id" not in shown
    assert 9_000 < len(shown) < 11_000 and "error: 3 tests FAILED" not in shown
