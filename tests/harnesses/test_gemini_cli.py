"""Gemini CLI 0.61.0 (npm) with s3spill's hooks, as the model receives it (GOOGLE_GEMINI_BASE_URL stand-in).

Routes measured here: BeforeTool ``hookSpecificOutput.tool_input`` rewrites
``run_shell_command`` through the same shell wrapper as Claude Code's Bash; AfterTool
``decision: "deny"`` + ``reason`` replaces an MCP result (the model gets it as the call's
``error``); ``hookSpecificOutput.tool_output`` is ignored. Tools are ``mcp_<server>_<tool>``.
"""

from __future__ import annotations

import json
import re
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
    print("gemini with s3spill:", len(_shown(seq)), len(_shown(build)), len(_shown(mcp)))
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


def _steady(response: dict[str, Any]) -> str:
    """What the model got, without what changes from run to run (the shell's process group,
    the name of the file Gemini saved a long output to)."""
    return re.sub(r"Process Group PGID: \d+|For full output see: [^\\\s]+", "-", _shown(response))


def _where_they_differ(got: str, want: str) -> str:
    """The first place two long results differ, with some text around it (pytest's own diff
    of a 40,000-character string stops before it)."""
    pairs = enumerate(zip(got, want, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(got), len(want)))
    start = max(at - 80, 0)
    return (f"lengths {len(got)} vs {len(want)}, first difference at {at}: "
            f"{got[start:at + 160]!r} vs {want[start:at + 160]!r}")


def test_a_hook_that_crashes_or_times_out_leaves_geminis_own_result(gemini: GeminiCli) -> None:
    """Both hooks killed by a signal, then both slower than their ``timeout``: Gemini CLI
    gives up on them and the model gets Gemini's own results for the 6.9 MB shell output, the
    failing 5 MB build and the 1 MB MCP result, the commands run as typed."""
    gemini.mcp["big"] = {"command": sys.executable, "args": [BIG_MCP], "env": {"BIG_MCP_BYTES": "1000000"}}
    turns = [tool_call("run_shell_command", {"command": "seq 1 1000000"}),
             tool_call("run_shell_command", {"command": BUILD}), tool_call("mcp_big_dump", {}), text("done")]
    bare = [_steady(r) for r in gemini.run(turns).function_responses()]
    print("gemini without s3spill:", [len(b) for b in bare])
    assert "1000000" in bare[0] and "Exit Code: 1" in bare[1] and "row 0000000" in bare[2]
    gemini.use_s3spill()
    ours = gemini.hooks["AfterTool"][0]["hooks"][0]
    for hook in ({**ours, "command": "kill -9 $$"},
                 {**ours, "command": "sleep 5; " + str(ours["command"]), "timeout": 1000}):
        gemini.hooks = {"BeforeTool": [{"matcher": "run_shell_command", "hooks": [hook]}],
                        "AfterTool": [{"matcher": ".*", "hooks": [hook]}]}
        seq, build, mcp = [_steady(r) for r in gemini.run(turns).function_responses()]
        # The build's cut is compared by what it must hold: its text was seen to differ
        # between two runs whose hooks did nothing (how Gemini's shell reads a 5 MB burst).
        assert seq == bare[0], _where_they_differ(seq, bare[0])
        assert mcp == bare[2], _where_they_differ(mcp, bare[2])
        assert "source_id" not in build
        assert "Exit Code: 1" in build and "error: 3 tests FAILED" in build and len(build) < 45_000


def test_a_big_read_file_is_replaced_as_an_error_holding_geminis_page(gemini: GeminiCli) -> None:
    """``read_file`` of a 6,000-line file (360 KB): Gemini CLI pages it itself (lines 1-2000,
    ~120,000 characters, its own "truncated" header first); over the read threshold the
    AfterTool answer replaces that page with our preview, which the model gets as the call's
    ``error``, and the pointer holds Gemini's page (header included), not the file."""
    lines = [f"line {n:05d} " + "x" * 48 for n in range(1, 6001)]
    (gemini.project / "big.txt").write_text("\n".join(lines) + "\n")
    read = tool_call("read_file", {"file_path": str(gemini.project / "big.txt")})
    bare = gemini.run([read, text("done")]).function_responses()[0]
    assert "Showing lines 1-2000 of 6001" in _shown(bare) and 100_000 < len(_shown(bare)) < 130_000
    gemini.use_s3spill(before=False)
    turns = [read, follow_pointer(READ, offset=1_000, limit=1), text("done")]
    shown, page = gemini.run(turns).function_responses()
    print("gemini read_file:", len(_shown(bare)), len(_shown(shown)))
    assert "error" in shown["response"] and f"{READ}(source_id" in _shown(shown)
    assert len(_shown(shown)) < 15_000
    assert "line 00995 " in _page(page)  # six header lines come first in the stored page
