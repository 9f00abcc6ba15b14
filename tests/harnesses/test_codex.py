"""Codex CLI 0.171.0 (npm) with s3spill's hooks and the proxy, as the model receives it (Responses stand-in).

Routes measured here: ``PreToolUse`` with ``permissionDecision: "allow"`` +
``updatedInput`` rewrites the shell command (``exec_command``, seen by hooks as ``Bash``)
through the same wrapper as Claude Code's Bash; ``PostToolUse`` ``decision: "block"`` +
``reason`` replaces an MCP result (``updatedMCPToolOutput`` is ignored by 0.171.0); the
proxy in ``[mcp_servers]`` works with no hook at all. Codex's ``PostToolUse`` for a shell
command gets only the output Codex already cut, so no after-hook can store it whole.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.harnesses.conftest import Codex, python_server
from tests.harnesses.model_api import follow_pointer, text, tool_call

READ = "mcp__s3spill__read_artifact"
BIG_MCP = str(Path(__file__).with_name("big_mcp.py"))
BUILD = ("python3 -c 'import sys\nfor i in range(120000):"
         " print(f\"[{i:07d}] compiling module_{i}.c ... ok\")'; echo 'error: 3 tests FAILED' >&2; exit 1")
#: Codex's own limit for one tool output with a model from its catalog (10,000 tokens).
CODEX_LIMIT = 40_300


def _page(shown: str) -> str:
    """The page text of a read_artifact result (Codex shows the tool's structuredContent JSON
    when there is one, after its "Wall time" line)."""
    body = shown[shown.find("{"):] if "{" in shown else shown
    try:
        return str(json.loads(body)["text"])
    except (ValueError, KeyError, TypeError):
        return shown


def _steady(shown: str) -> str:
    """A shell result without what changes from run to run (Codex's chunk id and wall time)."""
    return re.sub(r"^(Chunk ID|Wall time): .*\n", "", shown, flags=re.M)


def _big(codex: Codex, size: int) -> None:
    codex.mcp["big"] = {"command": sys.executable, "args": [BIG_MCP], "env": {"BIG_MCP_BYTES": str(size)}}


def test_shell_outputs_reach_the_model_as_preview_and_pointer(codex: Codex) -> None:
    """``seq 1 1000000`` (6.9 MB) and a failing build with a 5 MB log: without s3spill Codex
    sends its own 40,000-character cut; with the PreToolUse wrapper the model gets our preview
    (the exit code and the error line kept) and a pointer whose pages are the right lines."""
    bare = codex.run([tool_call("exec_command", {"cmd": "seq 1 1000000"}), text("done")]).call_outputs()
    assert "Warning: truncated output" in bare[0] and CODEX_LIMIT - 1_000 < len(bare[0]) < CODEX_LIMIT
    codex.use_s3spill()
    outputs = codex.run([
        tool_call("exec_command", {"cmd": "seq 1 1000000"}), follow_pointer(READ, offset=499_999, limit=2),
        tool_call("exec_command", {"cmd": BUILD}), follow_pointer(READ, offset=60_000, limit=1),
        text("done")]).call_outputs()
    seq, seq_page, build, build_page = outputs
    print("codex shell:", len(bare[0]), len(seq), len(build))
    assert "6888896 bytes" in seq and f"{READ}(source_id" in seq and "truncated output" not in seq
    assert len(seq) < 12_000 and "500000\t500000\n500001\t500001\n" in _page(seq_page)
    assert "Process exited with code 1" in build and "error: 3 tests FAILED" in build
    assert len(build) < 12_000 and "60001\t[0060000] compiling module_60000.c ... ok" in _page(build_page)


def test_the_wrapper_works_in_codexs_workspace_write_sandbox(codex: Codex) -> None:
    """Codex's default sandbox (``workspace-write``: no network, writes only in the project
    and the temp directory) with a ``file://`` store inside the project: the wrapped command's
    ``s3spill run`` stores and previews from inside the sandbox, and the pointer pages."""
    codex.sandbox = "workspace-write"
    codex.store_url = (codex.project / ".s3spill").as_uri()
    codex.use_s3spill(post=False)
    seq, page = codex.run([tool_call("exec_command", {"cmd": "seq 1 1000000"}),
                           follow_pointer(READ, offset=499_999, limit=1), text("done")]).call_outputs()
    print("codex sandboxed:", len(seq))
    assert "6888896 bytes" in seq and f"{READ}(source_id" in seq and len(seq) < 12_000
    assert "500000\t500000\n" in _page(page)


def test_a_1_mb_mcp_result_is_replaced_by_the_post_hook(codex: Codex) -> None:
    """A 1 MB MCP result: Codex alone sends a 40,000-character cut; the PostToolUse answer
    (``decision: "block"`` + our preview as ``reason``) is all the model gets, and the pointer
    pages row 25,000."""
    _big(codex, 1_000_000)
    bare = codex.run([tool_call("mcp__big__dump", {}), text("done")]).call_outputs()
    assert "row 0000000" in bare[0] and len(bare[0]) < 50_000 and "source_id" not in bare[0]
    codex.use_s3spill()
    shown, page = codex.run([tool_call("mcp__big__dump", {}), follow_pointer(READ, offset=25_000, limit=1),
                             text("done")]).call_outputs()
    print("codex mcp:", len(bare[0]), len(shown))
    assert "1000000 bytes" in shown and f"{READ}(source_id" in shown and len(shown) < 30_000
    assert "row 0025000 value=175000" in _page(page)


def test_a_1_mb_mcp_result_through_the_proxy(codex: Codex) -> None:
    """The same server behind ``s3spill mcp-proxy`` in ``[mcp_servers]``, no hook: the
    model gets the proxy's preview and pointer, and pages row 25,000 with the proxy's own
    read tool (``s3spill_read_artifact`` in the namespace ``mcp__big``)."""
    codex.mcp["big"] = python_server("-m", "s3spill", "--store", codex.store_url, "--session", codex.session,
                                     "mcp-proxy", "--", sys.executable, BIG_MCP)
    codex.mcp["big"]["env"]["BIG_MCP_BYTES"] = "1000000"
    shown, page = codex.run([tool_call("mcp__big__dump", {}),
                             follow_pointer("mcp__big__s3spill_read_artifact", offset=25_000, limit=1),
                             text("done")]).call_outputs()
    print("codex proxy:", len(shown))
    assert "1000000 bytes" in shown and "s3spill_read_artifact(source_id" in shown and len(shown) < 30_000
    assert "row 0025000 value=175000" in _page(page)


def test_a_small_output_passes_untouched(codex: Codex) -> None:
    """A 200-byte shell output and MCP result: the same text as with no hook."""
    _big(codex, 200)
    turns = [tool_call("exec_command", {"cmd": "python3 -c 'print(\"x\" * 199)'"}),
             tool_call("mcp__big__dump", {}), text("done")]
    bare = [_steady(o) for o in codex.run(turns).call_outputs()]
    codex.use_s3spill()
    assert [_steady(o) for o in codex.run(turns).call_outputs()] == bare
    assert "x" * 199 + "\n" in bare[0] and "row 0000000 value=0" in bare[1]


def test_a_hook_that_crashes_or_times_out_leaves_codexs_own_result(codex: Codex) -> None:
    """Both hooks killed by a signal, then both slower than their ``timeout``: Codex gives
    up on them and the model gets Codex's own results, the command run as typed."""
    _big(codex, 1_000_000)
    turns = [tool_call("exec_command", {"cmd": "seq 1 1000000"}), tool_call("mcp__big__dump", {}),
             text("done")]
    bare = [_steady(o) for o in codex.run(turns).call_outputs()]
    ours = codex.hook()
    for hook in ({**ours, "command": "kill -9 $$"},
                 {**ours, "command": "sleep 5; " + str(ours["command"]), "timeout": 1}):
        codex.hooks = {"PreToolUse": [{"matcher": "^Bash$", "hooks": [hook]}],
                       "PostToolUse": [{"matcher": "^mcp__", "hooks": [hook]}]}
        assert [_steady(o) for o in codex.run(turns).call_outputs()] == bare
