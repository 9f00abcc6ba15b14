"""`s3spill hook claude-code|gemini-cli|codex` on recorded payloads, run as the harness runs it.

Each test starts the real command with the payload on stdin (the harness's contract: JSON
in, JSON out, exit 0) and checks the answer against the documented output fields, then
reads the stored artifact back from the harness's own session.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from s3spill.adapters.harness_hooks import floor_bytes, hook_policy
from s3spill.artifacts.store import ArtifactStore
from s3spill.cli.hook_cmds import HOOK_FLOOR_BYTES
from s3spill.store.local import LocalStore
from s3spill.testing import child_env, free_port

DATA = Path(__file__).resolve().parents[1] / "data" / "hooks"
#: Claude Code's inline limit for Bash output (characters, BASH_MAX_OUTPUT_LENGTH default).
BASH_INLINE_LIMIT = 30_000


def _payload(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / name).read_text()))


def _run(harness: str, payload: dict[str, Any] | bytes, store_url: str,
         *flags: str) -> subprocess.CompletedProcess[bytes]:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    env = child_env({})
    env.pop("S3SPILL_SESSION", None)
    proc = subprocess.run([sys.executable, "-m", "s3spill", "--store", store_url, *flags, "hook", harness],
                          input=raw, capture_output=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return proc


def _log(lines: int) -> str:
    body = "".join(f"[{i:07d}] compiling module_{i % 997}.c ... ok\n" for i in range(lines))
    return body + "error: 3 tests FAILED (test_io, test_net, test_gc)\n"


def _stored(store: LocalStore, session: str, text: str) -> bytes:
    sid = re.findall(r'source_id="([^"]+)"', text)[-1]
    return b"".join(ArtifactStore(store, session_id=session).iter_verified(sid))


def test_a_5_mb_bash_output_becomes_a_pointer_under_the_inline_limit(tmp_path: Path) -> None:
    """A 5 MB Bash stdout comes back as updatedToolOutput in Bash's own shape, under 30,000
    characters, naming the s3spill MCP tools; the artifact in the payload's session is the
    output byte for byte."""
    store = LocalStore(tmp_path / "store")
    payload = _payload("claude_code_bash.json")
    output = _log(130_000)
    assert len(output.encode()) > 5_000_000
    payload["tool_response"]["stdout"] = output
    payload["tool_response"]["stderr"] = "warning: deprecated flag\n"
    answer = json.loads(_run("claude-code", payload, store.url).stdout)
    specific = answer["hookSpecificOutput"]
    assert specific["hookEventName"] == "PostToolUse" and "updatedMCPToolOutput" not in specific
    updated = specific["updatedToolOutput"]
    assert set(updated) == set(payload["tool_response"])
    assert updated["stderr"] == "warning: deprecated flag\n" and updated["interrupted"] is False
    assert len(updated["stdout"]) + len(updated["stderr"]) < BASH_INLINE_LIMIT
    assert "error: 3 tests FAILED" in updated["stdout"]
    assert "mcp__s3spill__read_artifact(source_id" in updated["stdout"]
    assert _stored(store, payload["session_id"], updated["stdout"]) == output.encode()


def test_a_200_byte_result_is_left_alone(tmp_path: Path) -> None:
    """A small Bash result prints nothing (no change) and stores nothing."""
    payload = _payload("claude_code_bash.json")
    payload["tool_response"]["stdout"] = "x" * 200
    proc = _run("claude-code", payload, (tmp_path / "store").as_uri())
    assert proc.stdout == b""
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*.zst"))


def test_a_read_and_an_mcp_result_keep_their_shapes(tmp_path: Path) -> None:
    """A huge Read keeps the file record with whole head lines as its content (Claude Code
    numbers them from startLine) and gives the last lines, numbered as Claude Code numbers
    them, and the pointer in additionalContext; an MCP tool's content blocks are spilled and
    sent in both updated fields; our own tools pass."""
    store = LocalStore(tmp_path / "store")
    read = _payload("claude_code_read.json")
    content = _log(20_000)
    read["tool_response"]["file"].update(content=content, numLines=20_001, totalLines=20_001)
    answer = json.loads(_run("claude-code", read, store.url).stdout)
    updated = answer["hookSpecificOutput"]["updatedToolOutput"]
    shown = updated["file"]["content"].split("\n")
    assert updated["type"] == "text" and updated["file"]["totalLines"] == 20_001
    assert updated["file"]["numLines"] == len(shown) and content.startswith("\n".join(shown) + "\n")
    note = answer["hookSpecificOutput"]["additionalContext"]
    assert "20001\terror: 3 tests FAILED (test_io, test_net, test_gc)\n" in note
    assert "19999\t[0019998] compiling" in note
    assert _stored(store, read["session_id"], note) == content.encode()

    mcp = _payload("claude_code_mcp.json")
    events = "".join(json.dumps({"seq": i, "kind": "tick"}) + "\n" for i in range(40_000))
    mcp["tool_response"][0]["text"] = events
    specific = json.loads(_run("claude-code", mcp, store.url).stdout)["hookSpecificOutput"]
    assert specific["updatedMCPToolOutput"] == specific["updatedToolOutput"]
    blocks = specific["updatedToolOutput"]
    assert [b["type"] for b in blocks] == ["text"] and len(blocks[0]["text"]) < 25_000
    assert _stored(store, mcp["session_id"], blocks[0]["text"]) == events.encode()

    mcp["tool_name"] = "mcp__s3spill__read_artifact"
    assert _run("claude-code", mcp, store.url).stdout == b""


def test_gemini_after_tool_replaces_the_output_text(tmp_path: Path) -> None:
    """Gemini CLI's AfterTool gets hookSpecificOutput.tool_output (text) for a big shell result,
    naming the bare MCP tool names; a small one prints nothing."""
    store = LocalStore(tmp_path / "store")
    payload = _payload("gemini_cli_shell.json")
    output = _log(60_000)
    payload["tool_response"].update(llmContent=output, returnDisplay=output)
    specific = json.loads(_run("gemini-cli", payload, store.url).stdout)["hookSpecificOutput"]
    assert specific["hookEventName"] == "AfterTool"
    assert len(specific["tool_output"]) < BASH_INLINE_LIMIT
    assert "read_artifact(source_id" in specific["tool_output"]
    assert _stored(store, payload["session_id"], specific["tool_output"]) == output.encode()
    payload["tool_response"].update(llmContent="ok\n", returnDisplay="ok\n")
    assert _run("gemini-cli", payload, store.url).stdout == b""

    # Gemini CLI gives its MCP servers no session id: the operator names one for both sides.
    payload["tool_response"].update(llmContent=output)
    named = json.loads(_run("gemini-cli", payload, store.url, "--session", "gemini-team").stdout)
    assert _stored(store, "gemini-team", named["hookSpecificOutput"]["tool_output"]) == output.encode()


def test_codex_post_tool_use_replaces_a_big_mcp_text_result_through_block_and_reason(tmp_path: Path) -> None:
    """Codex 0.171.0 ignores updatedMCPToolOutput: a text MCP result over budget is answered
    with ``decision: "block"`` and our preview as ``reason``, naming mcp__s3spill__read_artifact,
    the whole text stored; a small one, an image or a shell result gets no answer."""
    store = LocalStore(tmp_path / "store")
    payload = _payload("codex_mcp.json")
    output = _log(60_000)
    payload["tool_response"]["content"] = [{"type": "text", "text": output}]
    answer = json.loads(_run("codex", payload, store.url, "--session", "codex-team").stdout)
    assert set(answer) == {"decision", "reason"} and answer["decision"] == "block"
    reason = answer["reason"]
    assert len(reason) < BASH_INLINE_LIMIT and "mcp__s3spill__read_artifact(source_id" in reason
    assert _stored(store, "codex-team", answer["reason"]) == output.encode()
    image = {"type": "image", "data": base64.b64encode(b"x" * 40_000).decode(), "mimeType": "image/png"}
    payload["tool_response"]["content"] = [{"type": "text", "text": output}, image]
    assert _run("codex", payload, store.url).stdout == b""
    payload["tool_response"]["content"] = [{"type": "text", "text": "ok\n"}]
    assert _run("codex", payload, store.url).stdout == b""
    shell = {**payload, "tool_name": "Bash", "tool_input": {"command": "seq 1 9"}, "tool_response": output}
    assert _run("codex", shell, store.url).stdout == b""


def test_codex_pre_tool_use_wraps_bash_with_permission_decision_allow(tmp_path: Path) -> None:
    """Codex applies updatedInput only beside permissionDecision "allow": the answer carries
    both, the command wrapped for the codex harness; MCP calls get no answer."""
    payload = _payload("codex_bash_pre.json")
    answer = json.loads(_run("codex", payload, (tmp_path / "s").as_uri(), "--session", "c").stdout)
    specific = answer["hookSpecificOutput"]
    assert specific["permissionDecision"] == "allow" and specific["hookEventName"] == "PreToolUse"
    assert " codex Bash call_1;" in specific["updatedInput"]["command"]
    assert specific["updatedInput"]["command"].startswith("if [ -r ")
    mcp = {**payload, "tool_name": "mcp__big__dump", "tool_input": {}}
    assert _run("codex", mcp, (tmp_path / "s").as_uri(), "--session", "c").stdout == b""


@pytest.mark.parametrize("raw", [b"{not json" + b" " * 30_000, json.dumps([1] * 20_000).encode()])
def test_a_payload_it_does_not_understand_fails_open(raw: bytes, tmp_path: Path) -> None:
    """Garbage or an unexpected shape: nothing printed, exit 0 (the tool's result goes on)."""
    assert _run("claude-code", raw, (tmp_path / "s").as_uri()).stdout == b""


def test_an_unreachable_store_still_answers_bounded_and_honest(tmp_path: Path) -> None:
    """With S3 unreachable the answer is the bounded head/tail saying the output could NOT be
    saved — never a pointer to an artifact that does not exist — and the hook still exits 0."""
    payload = _payload("claude_code_bash.json")
    payload["tool_response"]["stdout"] = _log(20_000)
    env = child_env({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}", "AWS_ACCESS_KEY_ID": "x",
                     "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"})
    proc = subprocess.run([sys.executable, "-m", "s3spill", "--store", "s3://nowhere/spill", "hook",
                           "claude-code"], input=json.dumps(payload).encode(), capture_output=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    stdout = json.loads(proc.stdout)["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert "could NOT be saved" in stdout and "source_id=" not in stdout
    assert len(stdout) < BASH_INLINE_LIMIT and "error: 3 tests FAILED" in stdout


def test_the_early_exit_floor_matches_the_policies() -> None:
    """The CLI's no-work size is the smallest threshold of either harness's policy."""
    smallest = min(floor_bytes(hook_policy("claude-code")), floor_bytes(hook_policy("gemini-cli")))
    assert smallest == HOOK_FLOOR_BYTES


def test_an_mcp_image_stays_an_image_while_its_text_is_spilled(tmp_path: Path) -> None:
    """Content blocks of an MCP result: the huge text becomes a pointer, the small picture is
    handed on as the very block the tool returned."""
    store = LocalStore(tmp_path / "store")
    mcp = _payload("claude_code_mcp.json")
    image = {"type": "image", "mimeType": "image/png",
             "data": base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40_000).decode()}
    text = _log(5_000)
    mcp["tool_response"] = [{"type": "text", "text": text}, image]
    blocks = json.loads(_run("claude-code", mcp, store.url).stdout)["hookSpecificOutput"]["updatedToolOutput"]
    assert blocks[-1] == image or image in blocks
    joined = "".join(b.get("text", "") for b in blocks)
    assert len(joined) < 25_000 and "source_id=" in joined
    stored = _stored(store, mcp["session_id"], joined).decode()
    assert stored.startswith(text) and "image #2 (image/png" in stored


def test_the_server_name_must_fit_a_tool_name(tmp_path: Path) -> None:
    """`--server` with a space is a usage error (exit 2), not a hook that silently never answers;
    a valid one is what the pointer names."""
    bad = subprocess.run([sys.executable, "-m", "s3spill", "hook", "claude-code", "--server", "my files"],
                         input=b"{}", capture_output=True, env=child_env({}), timeout=60, check=False)
    assert bad.returncode == 2 and b"--server" in bad.stderr
    assert hook_policy("claude-code", "files").read_tool == "mcp__files__read_artifact"
