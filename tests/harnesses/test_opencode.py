"""opencode 1.18.33 (npm) with examples/opencode/s3spill.js, as the model receives it (Anthropic stand-in).

Route measured here: the plugin's ``tool.execute.after`` replaces ``output.output``, which
opencode sends to the model; a shell output opencode cut itself (its last ~14,000
characters and "Full output saved to: PATH") is stored from that file, whole.
"""

from __future__ import annotations

import json
from typing import Any

from tests.harnesses.conftest import Opencode
from tests.harnesses.model_api import follow_pointer, result_text, text, tool_call

READ = "s3spill_read_artifact"


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
    assert "6888896 bytes" in shown and f"{READ}(source_id" in shown and len(shown) < 30_000
    assert "500000\t500000\n500001\t500001\n" in _page(page)


def test_a_small_output_passes_untouched(opencode: Opencode) -> None:
    """A 200-byte output is what the model gets with no plugin."""
    turns = [tool_call("bash", {"command": "python3 -c 'print(\"x\" * 199)'", "description": "x"}),
             text("done")]
    bare = [result_text(r) for r in opencode.run(turns).tool_results()]
    opencode.use_s3spill()
    assert [result_text(r) for r in opencode.run(turns).tool_results()] == bare and "x" * 199 in bare[0]
