"""Shell-harness hooks: ``s3spill hook claude-code`` and ``s3spill hook gemini-cli``.

A harness the user cannot change still runs a command after every tool call and lets it
replace what the model sees. The contracts, as documented by each harness:

* Claude Code ``PostToolUse`` (command hook; JSON on stdin with ``session_id``,
  ``transcript_path``, ``cwd``, ``hook_event_name``, ``tool_name``, ``tool_input``,
  ``tool_response``, ``tool_use_id``). Answer on stdout, exit 0:
  ``{"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": …}}`` —
  "Replaces the tool output before it is sent to the model"; for built-in tools the value
  must keep the tool's output shape (Bash: ``stdout``/``stderr``/``interrupted``…; Read:
  ``{"type": "text", "file": {"filePath", "content", "numLines", "startLine",
  "totalLines"}}``) or it is rejected and the original kept. For MCP tools the older
  ``updatedMCPToolOutput`` is sent too (the only field before Claude Code 2.1.121). Sources:
  the hook schema and tool output schemas in the Claude Code CLI bundled with
  claude-agent-sdk 0.2.189 (CLI 2.1.332), and that SDK's ``PostToolUseHookSpecificOutput``
  type; Bash's inline limit is 30,000 characters by default (``BASH_MAX_OUTPUT_LENGTH``).
* Gemini CLI ``AfterTool`` (JSON on stdin with ``session_id``, ``tool_name``,
  ``tool_input``, ``tool_response`` = ``{llmContent, returnDisplay, error?}``). Gemini CLI
  0.61.0 ignores ``hookSpecificOutput.tool_output``; ``{"decision": "deny", "reason":
  "<text>"}`` is what replaces the result the model gets (its docs/hooks/reference.md:
  "This text replaces the tool result sent back to the model"; measured in
  tests/harnesses: the model gets it as the call's ``error``). Its MCP tools are
  ``mcp_<server>_<tool>``. Shell commands are caught before they run instead
  (``BeforeTool``, :mod:`.claude_bash`).
* Codex CLI ``PostToolUse`` (0.171.0; JSON on stdin like Claude Code's, ``tool_response``
  an MCP tool's ``{"content": [...]}`` whole, a shell's text already cut by Codex to its
  ``tool_output_token_limit``). ``hookSpecificOutput.updatedMCPToolOutput`` is parsed and
  ignored; ``{"decision": "block", "reason": "<text>"}`` is what replaces the result the
  model gets (measured in tests/harnesses: the call's output is the reason, nothing else).
  So an MCP result whose content is text goes through the Spiller and its preview is the
  reason; anything else is left to Codex. Shell commands are caught before they run
  (``PreToolUse``, :mod:`.claude_bash`). The model sees an MCP server's tools in the
  namespace ``mcp__<server>``; pointers name ``mcp__<server>__read_artifact``, as Codex
  names the tool in its hooks.

What is spilled: every string in the response that is over its tool's threshold goes
through the Spiller and the shape is kept (an MCP result's content blocks go through the
proxy's block handling, so an image stays an image or becomes a named artifact). The
session is the harness's own (``session_id`` of the payload, hashed into keys like any
untrusted session), so pointers and GC follow the harness's sessions, unless the operator
names one (``--session``): Claude Code gives the same id to the ``s3spill mcp`` it starts
(``$CLAUDE_CODE_SESSION_ID``), Gemini CLI documents no such variable, so there both sides
are given one session explicitly. A result that needs
nothing prints nothing. The hook fails open: any error — a payload it does not
understand, a store it cannot reach — prints nothing and exits 0, so the tool's result
reaches the model as if there were no hook; a store outage is the Spiller's honest,
bounded "could NOT be saved" text, never a pointer to nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Literal

from s3spill.adapters.claude_bash import decode_payload
from s3spill.adapters.claude_post import persisted_bash, read_answer, saved_mcp, saved_opencode
from s3spill.adapters.hook_stream import LongString, SpooledPayload, Streamed
from s3spill.context.policy import SHELL_TOOLS, KiB, SpillPolicy, ToolPolicy
from s3spill.context.secrets import redact_text
from s3spill.context.secrets.detector import may_hold_secret
from s3spill.fleet.policy_file import LoadedPolicy
from s3spill.log import get_logger
from s3spill.proxy.results import ResultSpiller
from s3spill.proxy.settings import ProxySettings
from s3spill.spill.job import CallId
from s3spill.spill.json_live import utf8_chunks
from s3spill.spill.result import SpillResult
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.usage.recorder import usage_recorder

log = get_logger("s3spill.hooks")

Harness = Literal["claude-code", "gemini-cli", "codex", "opencode"]
#: The model reaches our read/grep tools through ``s3spill mcp`` registered under this name.
DEFAULT_SERVER = "s3spill"
#: Claude Code keeps Bash output up to 30,000 characters inline; two spilled streams of
#: at most 2 + 8 KiB of preview plus a notice each stay well under it together.
SHELL_HOOK_POLICY = ToolPolicy(threshold=30_000, threshold_unit="chars", head_bytes=2 * KiB,
                               tail_bytes=8 * KiB)
#: Codex cuts a shell output to 10,000 bytes when it has no metadata for the model (10,000
#: tokens for the models it knows): a preview of 2 + 6 KiB and its notice stays under both.
CODEX_SHELL_POLICY = ToolPolicy(threshold=30_000, threshold_unit="chars", head_bytes=2 * KiB,
                                tail_bytes=6 * KiB)
#: A file read is already paged by the harness (Claude Code caps a Read at 25,000 tokens):
#: only one larger than our hard cap is spilled.
READ_HOOK_POLICY = ToolPolicy(threshold=100_000, threshold_unit="chars", head_bytes=8 * KiB,
                              tail_bytes=2 * KiB)
READ_TOOLS = ("Read", "read_file", "read_many_files")
#: A small payload that holds one of these may name a file the harness saved the whole
#: result to (:mod:`.claude_post`); the same markers send it past the CLI's fast path.
SAVED_MARKERS = (b"persistedOutputPath", b"saved to")


def tool_names(harness: Harness, server: str) -> tuple[str, str, str]:
    """How the model sees ``s3spill mcp``'s read, grep and list tools in this harness."""
    prefix = {"claude-code": f"mcp__{server}__", "codex": f"mcp__{server}__",
              "gemini-cli": f"mcp_{server}_"}.get(harness, f"{server}_")
    return (f"{prefix}read_artifact", f"{prefix}grep_artifact", f"{prefix}list_artifacts")


def hook_policy(harness: Harness, server: str = DEFAULT_SERVER) -> SpillPolicy:
    read, grep, _ = tool_names(harness, server)
    shell = CODEX_SHELL_POLICY if harness == "codex" else SHELL_HOOK_POLICY
    return SpillPolicy(read_tool=read, grep_tool=grep, shell=shell,
                       shell_tools=SHELL_TOOLS | {"run_shell_command"},
                       tools={name: READ_HOOK_POLICY for name in READ_TOOLS}, max_inline_tokens=25_000)


def floor_bytes(policy: SpillPolicy) -> int:
    """A payload no larger than this cannot hold a string over any threshold or budget."""
    limits = [policy.hard_cap_chars, policy.shell.threshold, policy.default.threshold,
              *(rule.threshold for rule in policy.tools.values())]
    if policy.max_inline_tokens is not None:
        limits.append(policy.max_inline_tokens)
    return min(limits)


class HookSpiller:
    """One hook call's Spiller (the harness's session) and what it does to a response."""

    def __init__(self, store: ObjectStore, session_id: str, harness: Harness,
                 server: str = DEFAULT_SERVER, fleet: LoadedPolicy | None = None) -> None:
        self.harness = harness
        self.own = tool_names(harness, server)
        settings = ProxySettings(tool_prefix=self.own[0].removesuffix("read_artifact"))
        policy = hook_policy(harness, server).model_copy(update={"image_pricer": settings.price_binary})
        #: The hook's own defaults, with what the fleet policy sets on top ([harness.<name>] too).
        self.policy = fleet.spill_policy(policy, harness) if fleet is not None else policy
        self.spiller = Spiller(store, session_id, self.policy, quota=fleet.quota() if fleet else None,
                               usage=usage_recorder(store, batch=False))
        self.results = ResultSpiller(self.spiller, settings)

    def close(self) -> None:
        self.spiller.close()

    def masked(self, text: str) -> str:
        """A result kept inline, as the model may see it (the same object when unchanged)."""
        if self.policy.secrets == "off" or not may_hold_secret(text.encode("utf-8", "surrogateescape")):
            return text
        masked = redact_text(text)[0]
        return text if masked == text else masked

    def value(self, value: Any, tool: str, call_id: str | None) -> Any:
        """``value`` with every oversized string spilled and its shape kept (same object if none)."""
        if isinstance(value, LongString | Streamed):
            return self._long(value, tool, call_id)
        if self.policy.never_spills(tool):  # the fleet policy's never_spill: as it is, but masked
            return self.masked(value) if isinstance(value, str) else value
        if isinstance(value, str):
            if not self.policy.should_externalize(value, tool):
                return self.masked(value)
            out = self.spiller.externalize(value, tool, call_id)
            log.info("hooks.spilled", tool=tool, bytes=out.total_bytes, spilled=out.spilled)
            return out.context_text
        if _is_content(value):
            changed = self.results.spill({"content": value}, tool, call_id)
            return value if changed is None else changed["content"]
        if isinstance(value, dict):
            if _is_content(value.get("content")):
                changed = self.results.spill(value, tool, call_id)
                return value if changed is None else changed
            items = {key: self.value(item, tool, call_id) for key, item in value.items()}
            return value if all(items[k] is value[k] for k in value) else items
        if isinstance(value, list):
            listed = [self.value(item, tool, call_id) for item in value]
            return value if all(a is b for a, b in zip(listed, value, strict=True)) else listed
        return value


    def _long(self, value: LongString | Streamed, tool: str, call_id: str | None) -> Any:
        """A huge payload's string: spilled from its file, or already while it was read."""
        if isinstance(value, Streamed):  # spilled while the payload was read (hook_streaming)
            if value.text is None:
                raise ValueError("the answer needs the streamed string, which was not stored")
            return value.text
        if self.policy.never_spills(tool) or value.min_chars <= self.policy.hard_cap_chars:
            return self.value(value.text(), tool, call_id)
        out = self.stream(utf8_chunks(value.pieces(), value.piece), tool, call_id)  # as streamed
        if out is None:  # not JSON after all: fail open, as for a small payload
            raise ValueError("a string of the payload is not JSON")
        log.info("hooks.spilled", tool=tool, bytes=out.total_bytes, spilled=out.spilled)
        return out.context_text

    def stream(self, pieces: Iterator[str] | Iterator[bytes], tool: str,
               call_id: CallId) -> SpillResult | None:
        """A huge payload's string spilled from its ``pieces``; None when they stopped with an
        error: the payload is not what it seemed, nothing was committed, and no usage event is
        recorded for an answer the model will never see (the hook fails open)."""
        failed: list[BaseException] = []
        out = self.spiller._spill(_noting(pieces, failed), tool, call_id)  # externalize, usage below
        if failed:
            return None
        if self.spiller.usage is not None:
            self.spiller._record(out)
        return out


def _noting(pieces: Iterator[str] | Iterator[bytes], failed: list[BaseException]) -> Iterator[str | bytes]:
    """``pieces``, an exception from them noted in ``failed`` (the Spiller keeps it to itself)."""
    try:
        yield from pieces
    except Exception as exc:
        failed.append(exc)
        raise


def _is_content(value: Any) -> bool:
    """Does ``value`` look like MCP content blocks (a list of dicts with a ``type``)?"""
    return isinstance(value, list) and bool(value) and all(
        isinstance(item, dict) and isinstance(item.get("type"), str) for item in value)


def streams_long_strings(payload: dict[str, Any]) -> bool:
    """Does :func:`claude_code` spill ``tool_response``'s strings as they are (so a huge
    payload's may stay :class:`~s3spill.adapters.hook_stream.LongString`)? A Bash-like
    PostToolUse that the harness did not persist; MCP and Read results are read whole."""
    tool = payload.get("tool_name")
    response = payload.get("tool_response")
    return (payload.get("hook_event_name") == "PostToolUse" and isinstance(tool, str)
            and not tool.startswith("mcp__") and tool not in READ_TOOLS
            and not (isinstance(response, dict) and "persistedOutputPath" in response))


def claude_code(payload: dict[str, Any], spill: HookSpiller) -> dict[str, Any] | None:
    """The PostToolUse answer for ``payload``, or None for "no change" (see :mod:`.claude_post`)."""
    if payload.get("hook_event_name") != "PostToolUse":
        return None
    tool = str(payload.get("tool_name") or "")
    if tool in spill.own:
        return None
    response = payload.get("tool_response")
    call_id = _str(payload.get("tool_use_id"))
    specific: dict[str, Any] = {"hookEventName": "PostToolUse"}
    if tool.startswith("mcp__"):
        saved = saved_mcp(response, spill, tool, call_id)
        updated: Any = saved if saved is not None else spill.value(response, tool, call_id)
        if updated is response:
            return None
        specific["updatedMCPToolOutput"] = updated
    elif tool in READ_TOOLS:
        read = read_answer(response, spill, tool, call_id)
        if read is None:
            return None
        updated, specific["additionalContext"] = read
    else:
        persisted = persisted_bash(response, spill, tool, call_id)
        updated = persisted if persisted is not None else spill.value(response, tool, call_id)
        if updated is response:
            return None
    specific["updatedToolOutput"] = updated
    return {"hookSpecificOutput": specific}


def gemini_cli(payload: dict[str, Any], spill: HookSpiller) -> dict[str, Any] | None:
    """The AfterTool answer for ``payload``, or None for "no change"."""
    if payload.get("hook_event_name") != "AfterTool":
        return None
    tool = str(payload.get("tool_name") or "")
    response = payload.get("tool_response")
    if tool in spill.own or not isinstance(response, dict):
        return None
    text = _llm_text(response.get("llmContent"))
    if text is None:
        return None
    if spill.policy.never_spills(tool) or not spill.policy.should_externalize(text, tool):
        masked = spill.masked(text)
        return None if masked is text else {"hookSpecificOutput": {"hookEventName": "AfterTool",
                                                                   "tool_output": masked}}
    out = spill.spiller.externalize(text, tool, None)
    # Gemini CLI 0.61.0 ignores hookSpecificOutput.tool_output; "deny" + "reason" is what
    # replaces the result the model gets (measured in tests/harnesses).
    return {"decision": "deny", "reason": out.context_text,
            "hookSpecificOutput": {"hookEventName": "AfterTool", "tool_output": out.context_text}}


def codex(payload: dict[str, Any], spill: HookSpiller) -> dict[str, Any] | None:
    """The PostToolUse answer for an MCP result over budget, or None for "no change".

    Only text can be the ``reason`` that replaces the result, so a result with an image or
    any other block, or with ``structuredContent`` (which Codex shows beside the text), is
    left to Codex. A secret in a result that fits is masked the same way.
    """
    if payload.get("hook_event_name") != "PostToolUse":
        return None
    tool = str(payload.get("tool_name") or "")
    response = payload.get("tool_response")
    if not tool.startswith("mcp__") or tool in spill.own or not isinstance(response, dict):
        return None
    blocks = response.get("content")
    if not isinstance(blocks, list) or not blocks or response.get("structuredContent") is not None:
        return None
    if not all(isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
               for b in blocks):
        return None
    text = "\n".join(str(b["text"]) for b in blocks)
    if spill.policy.never_spills(tool) or not spill.policy.should_externalize(text, tool):
        masked = spill.masked(text)
        return None if masked is text else {"decision": "block", "reason": masked}
    out = spill.spiller.externalize(text, tool, _str(payload.get("tool_use_id")))
    log.info("hooks.spilled", tool=tool, bytes=out.total_bytes, spilled=out.spilled)
    return {"decision": "block", "reason": out.context_text}


def _llm_text(content: Any) -> str | None:
    """Gemini's ``llmContent`` (a string, a part, or a list of them) as text; None if not text."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    if isinstance(content, list) and content:
        parts = [_llm_text(part) for part in content]
        if all(part is not None for part in parts):
            return "".join(p for p in parts if p is not None)
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def opencode(payload: dict[str, Any], spill: HookSpiller) -> dict[str, Any] | None:
    """The answer to examples/opencode/s3spill.js for one ``tool.execute.after``, or None.

    The plugin sends ``{"hook_event_name": "tool.execute.after", "tool", "session_id",
    "callID", "output"}``; ``{"output": TEXT}`` is what it puts in ``output.output``, which
    opencode 1.18.33 sends to the model in place of the tool's text (tests/harnesses). A
    shell output opencode cut itself ("...output truncated...", "Full output saved to:
    PATH", its last ~14,000 characters) is stored from that file, whole.
    """
    if payload.get("hook_event_name") != "tool.execute.after":
        return None
    tool = str(payload.get("tool") or "")
    text = payload.get("output")
    if tool in spill.own or not isinstance(text, str):
        return None
    call_id = _str(payload.get("callID"))
    saved = saved_opencode(text)
    if saved is not None:
        with open(saved, "rb") as whole:
            out = spill.spiller.externalize(whole, tool, call_id, force=True)
    elif spill.policy.should_externalize(text, tool):
        out = spill.spiller.externalize(text, tool, call_id)
    else:
        return None
    return {"output": out.context_text}


ANSWERS: dict[Harness, Callable[[dict[str, Any], HookSpiller], dict[str, Any] | None]] = {
    "claude-code": claude_code, "gemini-cli": gemini_cli, "codex": codex, "opencode": opencode}


def _encoded(out: dict[str, Any] | None) -> bytes:
    return b"" if out is None else json.dumps(out, ensure_ascii=False).encode("utf-8")


def answer(harness: Harness, raw: bytes | SpooledPayload, open_store: Callable[[], ObjectStore], *,
           server: str = DEFAULT_SERVER, session: str | None = None, debug: bool = False,
           fleet: Callable[[], LoadedPolicy] | None = None) -> bytes:
    """What the hook prints for the payload ``raw``: the JSON answer, or b"" for no change.

    ``session`` (the operator's ``--session`` / ``$S3SPILL_SESSION``) wins over the payload's
    ``session_id``, as everywhere in the CLI; without it the harness's own session is used.
    Never raises: any failure is logged and answered with b"" (the harness keeps the
    tool's own result). A payload that is not a UTF-8 JSON object is an ordinary input, one
    log line; anything else is one line too, its traceback only with ``debug`` (``--debug``),
    as docs/configuration.md promises for every command. ``fleet`` loads the fleet policy (one
    that does not check fails open like anything else: logged, the tool's result kept).
    A huge payload paused at its first long string (:class:`SpooledPayload` ``paused``) may
    have that string spilled while the rest is read (:mod:`.hook_streaming`).
    """
    stores: list[ObjectStore] = []

    def spill_for(session_id: str) -> HookSpiller:
        loaded = fleet() if fleet is not None else None
        stores.append(open_store())
        return HookSpiller(stores[-1], session_id, harness, server, loaded)

    try:
        policy = hook_policy(harness, server)
        if isinstance(raw, SpooledPayload) and raw.paused:
            from s3spill.adapters.hook_streaming import answer_streaming

            streamed = answer_streaming(harness, raw, session, spill_for)
            if streamed is not None:
                return streamed
        if isinstance(raw, SpooledPayload):  # huge: read from its file (docs: hook_stream)
            payload = raw.decode(streams_long_strings)
        elif len(raw) <= floor_bytes(policy) and not any(marker in raw for marker in SAVED_MARKERS) and (
                policy.secrets == "off" or not may_hold_secret(raw)):
            return b""  # nothing in it can be over a threshold, name a saved file or be a secret
        else:
            payload = decode_payload(raw)
        if payload is None:
            log.warning("hooks.unreadable_payload", harness=harness, bytes=len(raw),
                        detail="not a UTF-8 JSON object; the tool's result goes on unchanged")
            return b""
        session_id = session or _str(payload.get("session_id"))
        if not session_id:
            log.warning("hooks.no_session", harness=harness)
            return b""
        spill = spill_for(session_id)
        try:
            out = ANSWERS[harness](payload, spill)
        finally:
            spill.close()
        return _encoded(out)
    except Exception as exc:  # fail open: never block the tool, never lose its result
        if debug:
            log.exception("hooks.failed_open", harness=harness)
        else:
            log.error("hooks.failed_open", harness=harness, error=type(exc).__name__, detail=str(exc)[:300])
        return b""
    finally:
        for store in stores:
            store.close()
