"""opencode 1.18.33 (npm) with examples/opencode/s3spill.js, as the model receives it (Anthropic stand-in).

Routes measured here: the plugin's ``tool.execute.after`` replaces ``output.output`` (a
built-in tool) or ``output.content`` (an MCP tool, whose blocks it gets before opencode cuts
them), which opencode sends to the model; a shell output opencode cut itself (its last
~14,000 characters and "Full output saved to: PATH") is stored from that file, whole. The
proxy in opencode's ``mcp`` config works with no plugin at all. One run without s3spill
(module-scoped, every case at once) is what the other tests compare with: an opencode run
takes 20-60 s on the shared machine.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harnesses.conftest import Opencode
from tests.harnesses.model_api import Turn, follow_pointer, result_text, text, tool_call

READ = "s3spill_read_artifact"
BIG_MCP = str(Path(__file__).with_name("big_mcp.py"))
BUILD = ("python3 -c 'import sys\nfor i in range(120000):"
         " print(f\"[{i:07d}] compiling module_{i}.c ... ok\")'; echo 'error: 3 tests FAILED' >&2; exit 1")


def _page(block: dict[str, Any]) -> str:
    shown = result_text(block)
    return str(json.loads(shown)["text"]) if shown.startswith("{") else shown


def _steady(shown: str) -> str:
    """What the model got, without the name of the file opencode saved a cut output to."""
    return re.sub(r"Full output saved to: \S+", "-", shown)


def _cases(opencode: Opencode) -> list[Turn]:
    """The six calls, in order: 6.9 MB of ``seq``, a failing 5 MB build, a 1 MB MCP result,
    a ``read`` of a 6,000-line file, a 200-byte shell output and a 200-byte MCP result."""
    lines = [f"line {n:05d} " + "x" * 48 for n in range(1, 6001)]
    (opencode.project / "big.txt").write_text("\n".join(lines) + "\n")
    for name, size in (("big", 1_000_000), ("small", 200)):
        opencode.mcp[name] = {"type": "local", "command": [sys.executable, BIG_MCP],
                              "environment": {"BIG_MCP_BYTES": str(size)}}
    return [tool_call("bash", {"command": "seq 1 1000000", "description": "count"}),
            tool_call("bash", {"command": BUILD, "description": "build"}), tool_call("big_dump", {}),
            tool_call("read", {"filePath": str(opencode.project / "big.txt")}),
            tool_call("bash", {"command": "python3 -c 'print(\"x\" * 199)'", "description": "x"}),
            tool_call("small_dump", {})]


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """What the model gets for each of :func:`_cases` from opencode alone."""
    base = tmp_path_factory.mktemp("opencode-bare")
    (base / "home").mkdir()
    (base / "project").mkdir()
    alone = Opencode(base / "home", (base / "project").resolve(), (base / "store").as_uri())
    return [result_text(r) for r in alone.run([*_cases(alone), text("done")]).tool_results()]


def test_without_s3spill_opencode_cuts_each_big_output_itself(bare: list[str]) -> None:
    """opencode alone: ``seq``'s last ~14,000 characters and the build log's last lines (no
    exit code in the text, and the error line only if it came last), the MCP result's first
    2,000 lines, each naming a file it saved; the read capped at 50 KB (lines 1-853); the
    200-byte outputs as they are."""
    seq, build, mcp, read, small, small_mcp = bare
    print("opencode without s3spill:", [len(b) for b in bare])
    assert seq.startswith("...output truncated...") and "Full output saved to: " in seq
    # The error line goes to stderr, merged in no fixed order: opencode's cut may lose it.
    assert "Full output saved to: " in build and build.startswith("...output truncated...")
    assert "...38636 lines truncated..." in mcp and "Full output saved to: " in mcp
    assert "Output capped at 50 KB. Showing lines 1-853." in read
    assert "x" * 199 in small and small_mcp.startswith("row 0000000 value=0")


def test_with_the_plugin_each_big_output_is_preview_and_pointer_and_small_ones_pass(
        opencode: Opencode, bare: list[str]) -> None:
    """With the plugin: each big output is our preview and a pointer naming
    s3spill_read_artifact — the shell's from the file opencode saved (5,048,912 bytes for the
    build, its error line kept), the MCP result from the blocks the plugin gets before opencode
    cuts them, the read from opencode's page (its three header lines first) — and each pointer
    pages the right line; the 200-byte outputs are what opencode alone sends."""
    seq, build, mcp, read, small, small_mcp = _cases(opencode)
    opencode.use_s3spill()
    blocks = opencode.run([
        seq, follow_pointer(READ, offset=499_999, limit=2),
        build, follow_pointer(READ, offset=60_000, limit=1),
        mcp, follow_pointer(READ, offset=25_000, limit=1),
        read, follow_pointer(READ, offset=502, limit=1), small, small_mcp, text("done")]).tool_results()
    shown = [result_text(b) for b in blocks]
    print("opencode with s3spill:", [len(shown[i]) for i in (0, 2, 4, 6)])
    assert "6888896 bytes" in shown[0] and "500000\t500000\n500001\t500001\n" in _page(blocks[1])
    assert "5048912 bytes" in shown[2] and "error: 3 tests FAILED" in shown[2]
    assert "60001\t[0060000] compiling module_60000.c" in _page(blocks[3])
    assert "1000000 bytes" in shown[4] and "25001\trow 0025000 value=175000" in _page(blocks[5])
    assert "500: line 00500 " in _page(blocks[7])
    for big in (shown[0], shown[2], shown[4], shown[6]):
        assert f"{READ}(source_id" in big and len(big) < 15_000
    assert shown[8:] == bare[4:]


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


def test_a_hook_that_crashes_or_times_out_leaves_opencodes_own_result(opencode: Opencode,
                                                                     bare: list[str]) -> None:
    """The plugin's command killed by a signal, then slower than the plugin's timeout
    (``S3SPILL_HOOK_TIMEOUT_MS``): the model gets opencode's own results, as with no plugin."""
    seq, _, mcp, *_ = _cases(opencode)
    opencode.use_s3spill()
    slow = ["sh", "-c", 'sleep 5; exec "$0" "$@"', sys.executable, "-m", "s3spill"]
    for command, timeout in ((["sh", "-c", "kill -9 $$"], "60000"), (slow, "1000")):
        opencode.env = {"S3SPILL_HOOK_COMMAND": json.dumps(command), "S3SPILL_HOOK_TIMEOUT_MS": timeout}
        got = [_steady(result_text(b)) for b in opencode.run([seq, mcp, text("done")]).tool_results()]
        assert got == [_steady(bare[0]), _steady(bare[2])]
