"""PostToolUse answers for what Claude Code saved itself, on payloads shaped as 2.1.332 sends them.

tests/harnesses checks the same answers through the real Claude Code.
"""

from __future__ import annotations

import re
from pathlib import Path

from s3spill.adapters.harness_hooks import HookSpiller, claude_code
from s3spill.artifacts import ArtifactStore
from s3spill.store.local import LocalStore


def _stored(store: LocalStore, text: str) -> bytes:
    sid = re.findall(r'source_id="([^"]+)"', text)[-1]
    return b"".join(ArtifactStore(store, session_id="s").iter_verified(sid))


def test_a_persisted_bash_output_is_stored_whole_and_answered_without_the_persisted_fields(
        tmp_path: Path) -> None:
    """The file Claude Code saved is the artifact (not the 30,000-char excerpt), and the
    answer drops persistedOutputPath/Size so that Claude Code shows it."""
    whole = "".join(f"{i}\n" for i in range(1, 200_001))
    saved = tmp_path / "b1.txt"
    saved.write_text(whole)
    store = LocalStore(tmp_path / "store")
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t",
               "tool_response": {"stdout": whole[:30_000], "stderr": "", "interrupted": False,
                                 "isImage": False, "persistedOutputPath": str(saved),
                                 "persistedOutputSize": len(whole)}}
    spill = HookSpiller(store, "s", "claude-code")
    out = claude_code(payload, spill)
    spill.close()
    assert out is not None
    updated = out["hookSpecificOutput"]["updatedToolOutput"]
    assert set(updated) == {"stdout", "stderr", "interrupted", "isImage"}
    assert _stored(store, updated["stdout"]) == whole.encode() and len(updated["stdout"]) < 30_000


def test_an_mcp_result_claude_code_saved_is_stored_from_its_file(tmp_path: Path) -> None:
    """"Output has been saved to PATH." names the whole result: stored, answered as text blocks."""
    whole = "row\n" * 250_000
    saved = tmp_path / "mcp-big-dump-1.txt"
    saved.write_text(whole)
    store = LocalStore(tmp_path / "store")
    notice = (f"Error: result (1,000,000 characters across 250,000 lines) exceeds maximum allowed tokens. "
              f"Output has been saved to {saved}.\nFormat: Plain text\n")
    payload = {"hook_event_name": "PostToolUse", "tool_name": "mcp__big__dump", "tool_response": notice}
    spill = HookSpiller(store, "s", "claude-code")
    out = claude_code(payload, spill)
    spill.close()
    assert out is not None
    blocks = out["hookSpecificOutput"]["updatedMCPToolOutput"]
    assert blocks == out["hookSpecificOutput"]["updatedToolOutput"] and blocks[0]["type"] == "text"
    assert _stored(store, blocks[0]["text"]) == whole.encode()
    payload["tool_response"] = notice.replace(str(saved), str(tmp_path / "missing.txt"))
    spill = HookSpiller(store, "s", "claude-code")
    assert claude_code(payload, spill) is None
    spill.close()


def test_opencode_a_cut_shell_output_is_stored_from_its_saved_file(tmp_path: Path) -> None:
    """opencode's "...output truncated... Full output saved to: PATH" is stored from PATH,
    whole, and answered as the plugin's {"output": TEXT}; a small output gets no answer."""
    from s3spill.adapters.harness_hooks import opencode

    whole = "".join(f"{i}\n" for i in range(1, 300_001))
    saved = tmp_path / "share" / "opencode" / "tool-output" / "tool_1"
    saved.parent.mkdir(parents=True)
    saved.write_text(whole)
    cut = f"...output truncated...\n\nFull output saved to: {saved}\n\n" + whole[-14_000:]
    store = LocalStore(tmp_path / "store")
    spill = HookSpiller(store, "s", "opencode")
    out = opencode({"hook_event_name": "tool.execute.after", "tool": "bash", "output": cut}, spill)
    small = opencode({"hook_event_name": "tool.execute.after", "tool": "bash", "output": "ok\n"}, spill)
    spill.close()
    assert out is not None and small is None
    assert "s3spill_read_artifact(source_id" in out["output"]
    assert _stored(store, out["output"]) == whole.encode()


def test_opencode_a_cut_mcp_result_is_stored_and_a_file_outside_its_directory_is_not(tmp_path: Path) -> None:
    """Any other tool's cut names the file at its end ("The tool call succeeded but the output
    was truncated. Full output saved to: PATH"): stored whole from PATH. The same sentence
    naming a file outside opencode's tool-output directory stores nothing."""
    from s3spill.adapters.harness_hooks import opencode

    whole = "".join(f"row {i:07d}\n" for i in range(40_000))
    saved = tmp_path / "share" / "opencode" / "tool-output" / "tool_2"
    saved.parent.mkdir(parents=True)
    saved.write_text(whole)
    outside = tmp_path / "secret.txt"
    outside.write_text(whole)

    def cut(path: Path) -> str:
        return (whole[:24_000] + "\n...38000 lines truncated...\n\nThe tool call succeeded but the output "
                f"was truncated. Full output saved to: {path}\nUse the Task tool to have explore agent "
                "process it.")

    store = LocalStore(tmp_path / "store")
    spill = HookSpiller(store, "s", "opencode")
    event = {"hook_event_name": "tool.execute.after", "tool": "big_dump"}
    out = opencode({**event, "output": cut(saved)}, spill)
    fake = opencode({**event, "output": cut(outside)}, spill)
    spill.close()
    assert out is not None and _stored(store, out["output"]) == whole.encode()
    assert fake is None
