"""opencode 1.18.33 (npm) with examples/opencode/s3spill.js, as the model receives it (Anthropic stand-in).

Routes measured here: the plugin's ``tool.execute.after`` replaces ``output.output`` (a
built-in tool) or ``output.content`` (an MCP tool, whose blocks it gets before opencode cuts
them), which opencode sends to the model; a shell output opencode cut itself (its last
~14,000 characters and "Full output saved to: PATH") is stored from that file, whole. The
proxy in opencode's ``mcp`` config works with no plugin at all.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from tests.harnesses.conftest import Opencode
from tests.harnesses.model_api import follow_pointer, result_text, text, tool_call

READ = "s3spill_read_artifact"
BIG_MCP = str(Path(__file__).with_name("big_mcp.py"))
BUILD = ("python3 -c 'import sys\nfor i in range(120000):"
         " print(f\"[{i:07d}] compiling module_{i}.c ... ok\")'; echo 'error: 3 tests FAILED' >&2; exit 1")


def _page(block: dict[str, Any]) -> str:
    shown = result_text(block)
    return str(json.loads(shown)["text"]) if shown.startswith("{") else shown


def test_a_6_9_mb_shell_output_reaches_the_model_as_preview_and_pointer(opencode: Opencode) -> None:
    """``seq 1 1000000``: opencode alone sends its last ~14,000 characters and a file path;
    with the plugin the model gets our preview and a pointer naming s3spill_read_artifact,
    and the pointer pages lines 500,000-500,001."""
    turns = [tool_call("bash", {"command": "seq 1 1000000", "description": "count"}),
             follow_pointer(READ, offset=499_999, limit=2), text("done")]
    bare = opencode.run(turns[:1] + turns[2:]).tool_results()
    assert "...output truncated..." in result_text(bare[0])
    opencode.use_s3spill()
    first, page = opencode.run(turns).tool_results()
    shown = result_text(first)
    print("opencode 6.9 MB:", len(result_text(bare[0])), len(shown))
    assert "6888896 bytes" in shown and f"{READ}(source_id" in shown and len(shown) < 30_000
    assert "500000\t500000\n500001\t500001\n" in _page(page)


def test_a_small_output_passes_untouched(opencode: Opencode) -> None:
    """A 200-byte output is what the model gets with no plugin."""
    turns = [tool_call("bash", {"command": "python3 -c 'print(\"x\" * 199)'", "description": "x"}),
             text("done")]
    bare = [result_text(r) for r in opencode.run(turns).tool_results()]
    opencode.use_s3spill()
    assert [result_text(r) for r in opencode.run(turns).tool_results()] == bare and "x" * 199 in bare[0]


def _big(opencode: Opencode, size: int) -> None:
    opencode.mcp["big"] = {"type": "local", "command": [sys.executable, BIG_MCP],
                           "environment": {"BIG_MCP_BYTES": str(size)}}


def _steady(block: dict[str, Any]) -> str:
    """What the model got, without the name of the file opencode saved a cut output to."""
    return re.sub(r"Full output saved to: \S+", "-", result_text(block))


def test_a_failing_build_and_a_1_mb_mcp_result_reach_the_model_as_preview_and_pointer(
        opencode: Opencode) -> None:
    """A build that writes 5 MB and exits 1, and a 1 MB MCP result: opencode alone sends the
    log's last ~50,000 characters and the MCP result's first 2,000 lines, each with the path
    of a file it saved; with the plugin each is our preview (the error line kept; the log
    stored whole from opencode's file, the MCP result from the blocks the plugin gets before
    opencode cuts them), and the pointers page the log's line 60,001 and row 25,000."""
    _big(opencode, 1_000_000)
    bare = opencode.run([tool_call("bash", {"command": BUILD, "description": "build"}),
                         tool_call("big_dump", {}), text("done")]).tool_results()
    assert all("Full output saved to: " in result_text(b) for b in bare)
    opencode.use_s3spill()
    build, build_page, mcp, mcp_page = opencode.run([
        tool_call("bash", {"command": BUILD, "description": "build"}),
        follow_pointer(READ, offset=60_000, limit=1), tool_call("big_dump", {}),
        follow_pointer(READ, offset=25_000, limit=1), text("done")]).tool_results()
    print("opencode:", [len(result_text(b)) for b in bare], len(result_text(build)), len(result_text(mcp)))
    assert "error: 3 tests FAILED" in result_text(build) and "5048912 bytes" in result_text(build)
    assert len(result_text(build)) < 30_000
    assert "60001\t[0060000] compiling module_60000.c" in _page(build_page)
    assert "1000000 bytes" in result_text(mcp) and f"{READ}(source_id" in result_text(mcp)
    assert len(result_text(mcp)) < 30_000 and "25001\trow 0025000 value=175000" in _page(mcp_page)


def test_a_1_mb_mcp_result_through_the_proxy(opencode: Opencode) -> None:
    """The same server behind ``s3spill mcp-proxy`` in opencode's ``mcp`` config, no plugin:
    the model gets the proxy's preview and pages row 25,000 with ``big_s3spill_read_artifact``."""
    opencode.mcp["big"] = {"type": "local", "environment": {"BIG_MCP_BYTES": "1000000"}, "command": [
        sys.executable, "-m", "s3spill", "--store", opencode.store_url, "--session", opencode.session,
        "mcp-proxy", "--", sys.executable, BIG_MCP]}
    shown, page = opencode.run([tool_call("big_dump", {}), follow_pointer("big_s3spill_read_artifact",
                                                                          offset=25_000, limit=1),
                                text("done")]).tool_results()
    print("opencode proxy:", len(result_text(shown)))
    assert "1000000 bytes" in result_text(shown) and len(result_text(shown)) < 30_000
    assert "row 0025000 value=175000" in _page(page)


def test_a_hook_that_crashes_or_times_out_leaves_opencodes_own_result(opencode: Opencode) -> None:
    """The plugin's command killed by a signal, then slower than the plugin's timeout
    (``S3SPILL_HOOK_TIMEOUT_MS``): the model gets opencode's own results, as with no plugin."""
    _big(opencode, 1_000_000)
    turns = [tool_call("bash", {"command": "seq 1 1000000", "description": "count"}),
             tool_call("big_dump", {}), text("done")]
    bare = [_steady(b) for b in opencode.run(turns).tool_results()]
    opencode.use_s3spill()
    slow = ["sh", "-c", 'sleep 5; exec "$0" "$@"', sys.executable, "-m", "s3spill"]
    for command, timeout in ((["sh", "-c", "kill -9 $$"], "60000"), (slow, "1000")):
        opencode.env = {"S3SPILL_HOOK_COMMAND": json.dumps(command), "S3SPILL_HOOK_TIMEOUT_MS": timeout}
        assert [_steady(b) for b in opencode.run(turns).tool_results()] == bare


def test_a_big_file_read(opencode: Opencode) -> None:
    """``read`` of a 6,000-line file (360 KB): opencode pages it itself (capped at 50 KB,
    lines 1-853, numbered, and how to read on); with the plugin that page, over 25,000
    characters, is our preview and a pointer, and what is stored is the page opencode read
    (its three header lines and its line numbers included), not the file."""
    lines = [f"line {n:05d} " + "x" * 48 for n in range(1, 6001)]
    (opencode.project / "big.txt").write_text("\n".join(lines) + "\n")
    read = tool_call("read", {"filePath": str(opencode.project / "big.txt")})
    bare = result_text(opencode.run([read, text("done")]).tool_results()[0])
    assert "Output capped at 50 KB. Showing lines 1-853." in bare
    opencode.use_s3spill()
    shown, page = opencode.run([read, follow_pointer(READ, offset=502, limit=1), text("done")]).tool_results()
    print("opencode read:", len(bare), len(result_text(shown)))
    assert f"{READ}(source_id" in result_text(shown) and len(result_text(shown)) < 15_000
    assert "500: line 00500 " in _page(page)
