"""Claude Code ``PreToolUse`` for Bash: the command runs with its output going to ``s3spill run --follow``.

Why before rather than after: Claude Code 2.1.332 keeps only 30,000 characters of a Bash
output for its ``PostToolUse`` hooks (the rest is in a file it may or may not keep), and a
failing command reaches only ``PostToolUseFailure`` as a 10,040-character head in
``error``, with no file kept and no way to replace it. A ``PreToolUse`` answer with
``hookSpecificOutput.updatedInput`` is run as given, so the output is caught at its source.

How the rewritten command keeps the original's meaning. Claude Code runs a command as
``bash -c '… && eval 'COMMAND' && pwd -P >| CWDFILE'`` in a fresh shell per call, sourced
from its snapshot of the user's shell (aliases, functions), and reads the merged output
from a file after the shell exits. The rewrite therefore:

* runs the original text with ``eval`` in that same shell (not a child shell), so its
  quoting, heredocs, ``&&``, pipes, aliases and ``cd`` (which Claude Code records with its
  ``pwd -P`` afterwards) behave exactly as unwrapped; its exit status is the rewrite's;
* sends the command's stdout and stderr to a spool file in a fresh ``mktemp -d``
  directory, followed as it grows by ``s3spill run --follow DIR``, started detached
  (``( … & )``) so that a ``wait`` in the command does not wait for it. A file, not a
  pipe: a writer never blocks on it or dies of SIGPIPE, and if ``run`` dies the bytes are
  still there;
* after the command — or on its ``exit`` (an ``EXIT`` trap) — writes the exit status to
  ``DIR/rc`` (so ``run`` stops even when a background process the command started keeps
  writing), waits until ``run`` wrote ``DIR/done`` or is gone and, without ``done``, prints the
  spool as it is: the harness then gets the raw output, exactly as without the hook;
* if the directory or ``run`` cannot be set up, runs the original text unwrapped.

The shell side is :data:`WRAP_SCRIPT` (``shell_wrap.sh``), sourced by the rewritten
command. Gemini CLI's ``run_shell_command`` runs a command the same way (a fresh ``bash -c``
per call) and its ``BeforeTool`` hook can override ``tool_input``: :func:`before_tool`.
Codex CLI (0.171.0) sends the same ``PreToolUse`` payload for its shell tool (``tool_name``
"Bash", ``tool_input`` ``{"command": …}``, run as ``bash -lc 'COMMAND'``) and applies
``updatedInput`` only beside ``permissionDecision: "allow"`` (without it the rewrite is
refused as invalid and the command runs unwrapped). That "allow" carries nothing else in
Codex: its ``PreToolUseOutcome`` has no approval field, so the sandbox and the approval
policy still judge the rewritten command (codex-rs/hooks, ``parse_pre_tool_use``; measured
in tests/harnesses). Claude Code's answer never says "allow": there it would skip the
user's permission prompt.

``run_in_background`` commands are left alone: their output is read while they run
through Claude Code's own task output, which a wrapper that prints at the end would hide.
A command that is already wrapped is left alone (the marker below), so wrapping never
happens twice. ``timeout``, ``description`` and every other input field are kept.

This module imports nothing heavy: the hook's "nothing to do" path may call it.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: Present in every rewritten command (and nowhere a user would type it): "already wrapped".
MARKER = "__s3spill_w"


def is_wrapped(command: str) -> bool:
    return MARKER in command


#: The shell side of the wrapper, sourced by every rewritten command.
WRAP_SCRIPT = Path(__file__).with_name("shell_wrap.sh")


def wrap(command: str, capture: Sequence[str]) -> str:
    """``command`` rewritten so that its output goes through ``s3spill run --follow``.

    ``capture`` is ``[python, store, session, server, harness, tool, call_id?]`` (:func:`capture_args`).
    Short on purpose: Claude Code shows the command it ran in its background-task
    notifications, so the logic lives in :data:`WRAP_SCRIPT`; the original text comes first
    so that what is shown of it names the real command. Without the script (a package
    removed under a running session) the original runs as it is.
    """
    script = shlex.quote(str(WRAP_SCRIPT))
    original = shlex.quote(command)
    args = " ".join(shlex.quote(a) for a in capture)
    return (f"if [ -r {script} ]; then . {script} {original} {args}; "
            f"else eval {original}; fi # {MARKER}")


def pre_tool_use(payload: dict[str, Any], capture: Sequence[str], harness: str = "claude-code",
                 ) -> dict[str, Any] | None:
    """The PreToolUse answer that wraps a Bash call, or None to leave the call as it is."""
    if payload.get("hook_event_name") != "PreToolUse" or payload.get("tool_name") != "Bash":
        return None
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or not command.strip() or is_wrapped(command):
        return None
    if tool_input.get("run_in_background") is True:
        return None
    updated = {**tool_input, "command": wrap(command, capture)}
    specific: dict[str, Any] = {"hookEventName": "PreToolUse", "updatedInput": updated}
    if harness == "codex":
        specific["permissionDecision"] = "allow"
    return {"hookSpecificOutput": specific}


def before_tool(payload: dict[str, Any], capture: Sequence[str]) -> dict[str, Any] | None:
    """Gemini CLI's BeforeTool answer that wraps a ``run_shell_command``, or None.

    ``hookSpecificOutput.tool_input`` "merges with and overrides the model's arguments"
    (its docs/hooks/reference.md, 0.61.0); background commands are left alone, as in Claude Code.
    """
    if payload.get("hook_event_name") != "BeforeTool" or payload.get("tool_name") != "run_shell_command":
        return None
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict) or tool_input.get("is_background") is True:
        return None
    command = tool_input.get("command")
    if not isinstance(command, str) or not command.strip() or is_wrapped(command):
        return None
    updated = {"command": wrap(command, capture)}
    return {"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": updated}}


def project_session(env: Mapping[str, str]) -> str | None:
    """The session Claude Code's hooks and MCP servers can agree on: one per project.

    Claude Code 2.1.332 changes the hook's ``session_id`` on ``/clear`` and keeps the old
    one on ``--continue``, while the ``s3spill mcp`` it started keeps the
    ``$CLAUDE_CODE_SESSION_ID`` it was started with (a fresh one under ``--continue``):
    measured in tests/harnesses. ``$CLAUDE_PROJECT_DIR`` is the same for all of them, so
    a pointer written before ``/clear`` or ``--continue`` stays readable after it.
    """
    project = env.get("CLAUDE_PROJECT_DIR")
    return f"claude-code:{project}" if project else None


def decode_payload(raw: bytes) -> dict[str, Any] | None:
    """The hook payload as a dict, or None for anything that is not one (never raises)."""
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) else None


def capture_args(python: str, store: str, session: str, server: str, call_id: str | None,
                 harness: str = "claude-code", tool: str = "Bash") -> list[str]:
    """What :data:`WRAP_SCRIPT` is given to start ``python -m s3spill.cli.run_follow``.

    That module is ``s3spill run --follow`` without the full CLI's parser and imports: it
    runs once per Bash call, and most calls print a few lines.
    """
    return [python, store, session, server, harness, tool, *([call_id] if call_id else [])]


def pre_answer(raw: bytes, capture: Callable[[dict[str, Any]], list[str] | None],
               harness: str = "claude-code") -> bytes | None:
    """What ``s3spill hook`` prints for a PreToolUse (Claude Code, Codex) or BeforeTool (Gemini CLI)
    payload: b"" to leave the call as it is, None when ``raw`` is neither. ``capture`` gives the argv for it
    (None: no session to store in)."""
    payload = decode_payload(raw)
    event = None if payload is None else payload.get("hook_event_name")
    if payload is None or event not in ("PreToolUse", "BeforeTool"):
        return None
    argv = capture(payload)
    if argv is None:
        out = None
    elif event == "PreToolUse":
        out = pre_tool_use(payload, argv, harness)
    else:
        out = before_tool(payload, argv)
    return b"" if out is None else json.dumps(out, ensure_ascii=False).encode("utf-8")
