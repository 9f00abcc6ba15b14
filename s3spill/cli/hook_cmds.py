"""``s3spill hook claude-code|gemini-cli|codex|opencode``: the tool hooks of a shell harness.

Reads the harness's hook JSON on stdin and prints the replacement for an oversized tool
result (nothing for one that fits). Always exits 0 once running: a hook must never block
the tool it follows (see :mod:`s3spill.adapters.harness_hooks`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from s3spill.adapters.hook_stream import SpooledPayload, read_payload, streamed_field
from s3spill.cli.fastpath import HOOK_FLOOR_BYTES, needs_work, payload_prefix

__all__ = ["HOOK_FLOOR_BYTES", "cmd_hook", "register"]


def _server_name(value: str) -> str:
    """An argparse type: a name the harness can put in a tool name (``mcp__NAME__read_artifact``)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,24}", value):
        raise argparse.ArgumentTypeError(f"expected letters, digits, - or _ (at most 24), got {value!r}")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hook", help="tool hook for Claude Code and Codex (PreToolUse, PostToolUse), Gemini CLI (BeforeTool, "
        "AfterTool) or the opencode plugin",
        description="Read a harness's hook JSON on stdin. Claude Code PreToolUse (Bash): rewrite "
        "the command so that its output goes through `s3spill run` (prints the updatedInput). "
        "After a tool: when the result is over budget, or Claude Code saved it to a file, store "
        "it whole and print the answer that replaces it with a preview plus a pointer. The "
        "session: --session, else for Claude Code the project's (claude-code:$CLAUDE_PROJECT_DIR, "
        "the same across /clear and --continue), else the payload's session_id. A result that "
        "fits prints nothing. Any failure prints nothing and exits 0: the tool goes on as if "
        "there were no hook.",
        epilog="example (.claude/settings.json):\n"
        '  {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",\n'
        '    "command": "s3spill --store s3://my-bucket/agents hook claude-code"}]}],\n'
        '   "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command",\n'
        '    "command": "s3spill --store s3://my-bucket/agents hook claude-code"}]}]}}\n'
        "wiring for every harness: docs/harnesses.md",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("harness", choices=("claude-code", "gemini-cli", "codex", "opencode"))
    p.add_argument("--server", default="s3spill", metavar="NAME", type=_server_name,
                   help="name under which `s3spill mcp` is registered with the harness (pointers "
                   "name its tools, e.g. mcp__NAME__read_artifact in Claude Code; default s3spill)")
    p.set_defaults(func=cmd_hook)


def _session(args: argparse.Namespace) -> str | None:
    """The operator's session, else Claude Code's project session (None: the payload's)."""
    explicit = getattr(args, "session", None) or os.environ.get("S3SPILL_SESSION")
    if explicit or args.harness != "claude-code":
        return explicit
    from s3spill.adapters.claude_bash import project_session

    return project_session(os.environ)


def _capture(args: argparse.Namespace, payload: dict[str, Any]) -> list[str] | None:
    """The ``s3spill run --follow`` argv for the PreToolUse wrapper: this interpreter, the
    store and the session resolved here, so the wrapped command stores where this hook would."""
    from s3spill.adapters.claude_bash import capture_args

    session = _session(args) or payload.get("session_id")
    if not isinstance(session, str) or not session:
        return None
    store = getattr(args, "store", None) or os.environ.get("S3SPILL_STORE")
    if not store:
        from s3spill.store import default_store_url

        store = default_store_url()
    call_id = payload.get("tool_use_id")
    call = call_id if isinstance(call_id, str) else None
    tool = "run_shell_command" if args.harness == "gemini-cli" else "Bash"
    return capture_args(sys.executable, store, session, args.server, call, args.harness, tool)


def _read(args: argparse.Namespace) -> bytes | SpooledPayload:
    """stdin: bytes, or a huge payload spooled to a file when its long strings can be streamed
    (a Claude Code PostToolUse of a Bash-like tool; anything else is read whole, as before).
    Claude Code's is read only up to its first long string in ``tool_response`` (the rest is
    read while that string streams into the spill: :func:`~s3spill.adapters.harness_hooks.answer`)."""
    claude = args.harness == "claude-code"
    pause = (lambda p, s: streamed_field(p, s) is not None) if claude else None
    raw = read_payload(payload_prefix(), pause=pause)
    if isinstance(raw, SpooledPayload) and not raw.paused and (not claude or raw.event() != "PostToolUse"):
        return raw.raw()
    return raw


def cmd_hook(args: argparse.Namespace) -> int:
    raw = _read(args)
    if isinstance(raw, bytes) and not needs_work(raw, complete=True):
        return 0
    out: bytes | None = None
    if isinstance(raw, bytes) and (b"PreToolUse" in raw or b"BeforeTool" in raw):
        from s3spill.adapters.claude_bash import pre_answer

        out = pre_answer(raw, lambda p: _capture(args, p), args.harness)
    if out is None:
        from s3spill.adapters.harness_hooks import answer
        from s3spill.cli.policy_args import policy_from_args
        from s3spill.store.base import ObjectStore

        def store() -> ObjectStore:
            return policy_from_args(args).open_store(getattr(args, "store", None))

        out = answer(args.harness, raw, store, server=args.server, session=_session(args),
                     debug=bool(getattr(args, "debug", False)), fleet=lambda: policy_from_args(args))
    if out:
        sys.stdout.buffer.write(out + b"\n")
        sys.stdout.flush()
    return 0
