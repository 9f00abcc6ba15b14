"""Gemini CLI 0.61.0 (npm) with s3spill's hooks, as the model receives it (GOOGLE_GEMINI_BASE_URL stand-in).

Routes measured here: BeforeTool ``hookSpecificOutput.tool_input`` rewrites
``run_shell_command`` through the same shell wrapper as Claude Code's Bash; AfterTool
``decision: "deny"`` + ``reason`` replaces an MCP result (the model gets it as the call's
``error``); ``hookSpecificOutput.tool_output`` is ignored. Tools are ``mcp_<server>_<tool>``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.harnesses.conftest import GeminiCli
from tests.harnesses.model_api import follow_pointer, text, tool_call

READ = "mcp_s3spill_read_artifact"
BIG_MCP = str(Path(__file__).with_name("big_mcp.py"))
BUILD = ("python3 -c 'import sys\nfor i in range(120000):"
         " print(f\"[{i:07d}] compiling module_{i}.c ... ok\")'; echo 'error: 3 tests FAILED'; exit 1")


def _shown(response: dict[str, Any]) -> str:
    """What the model got of one tool call (Gemini sends a functionResponse object)."""
    return json.dumps(response["response"])


def _page(response: dict[str, Any]) -> str:
    output = response["response"].get("output", "")
    return str(json.loads(output)["text"]) if output.startswith("{") else str(output)


def test_shell_outputs_and_an_mcp_result_reach_the_model_as_preview_and_pointer(gemini: GeminiCli) -> None:
    """6.9 MB of ``seq``, a failing 5 MB build and a 1 MB MCP result: each is our bounded
    preview with a pointer naming mcp_s3spill_read_artifact, and the pointers page right."""
    gemini.use_s3spill()
    gemini.mcp["big"] = {"command": sys.executable, "args": [BIG_MCP], "env": {"BIG_MCP_BYTES": "1000000"}}
    script = gemini.run([
        tool_call("run_shell_command", {"command": "seq 1 1000000"}),
        follow_pointer(READ, offset=499_999, limit=2),
        tool_call("run_shell_command", {"command": BUILD}), follow_pointer(READ, offset=60_000, limit=1),
        tool_call("mcp_big_dump", {}), follow_pointer(READ, offset=25_000, limit=1), text("done")])
    seq, seq_page, build, build_page, mcp, mcp_page = script.function_responses()
    assert "6888896 bytes" in _shown(seq) and f"{READ}(source_id" in _shown(seq) and len(_shown(seq)) < 30_000
    assert "500000\t500000\n500001\t500001\n" in _page(seq_page)
    assert "Exit Code: 1" in _shown(build) and "error: 3 tests FAILED" in _shown(build)
    assert len(_shown(build)) < 30_000 and "60001\t[0060000] compiling" in _page(build_page)
    assert "1000041 bytes" in _shown(mcp) and "error" in mcp["response"] and len(_shown(mcp)) < 30_000
    # What is stored is the llmContent Gemini would have sent: its "<untrusted_context>" line first.
    assert "25001\trow 0024999 value=174993\n" in _page(mcp_page)


def test_a_small_output_passes_untouched(gemini: GeminiCli) -> None:
    """A 200-byte shell output and MCP result: the same text the model gets with no hook
    (apart from Gemini's own note that a hook rewrote the shell command's input)."""
    gemini.mcp["big"] = {"command": sys.executable, "args": [BIG_MCP], "env": {"BIG_MCP_BYTES": "200"}}
    turns = [tool_call("run_shell_command", {"command": "python3 -c 'print(\"x\" * 199)'"}),
             tool_call("mcp_big_dump", {}), text("done")]
    bare = gemini.run(turns).function_responses()
    gemini.use_s3spill()
    hooked = gemini.run(turns).function_responses()
    note = "\n\n[System] Tool input parameters were modified by a hook before execution."
    shell_bare, shell_hooked = (r["response"]["output"].split("Process Group PGID")[0]
                                for r in (bare[0], hooked[0]))
    assert shell_hooked == shell_bare and "x" * 199 in shell_bare
    assert hooked[0]["response"]["output"].endswith(note)
    assert hooked[1]["response"] == bare[1]["response"]
