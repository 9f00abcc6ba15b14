"""A huge Claude Code payload's string spilled while the payload is still being read.

Why: a Bash call that printed 200 MB reaches the hook as one JSON document with one 200 MB
string in it. Spooling the document to a file and decoding the string from there costs a
write and a read of the whole payload on top of the spill itself (issue 35: 1.3-1.4x the
spill of the same bytes). Here the scan of stdin pauses at the payload's first long string
(:func:`~s3spill.adapters.hook_stream.read_payload`'s ``pause``); when the payload before
it says the answer spills that string as it is (:func:`stream_tool`), the Spiller reads it
as stdin arrives (:class:`~s3spill.spill.json_live.LiveString`: the same pieces, decoded as
:class:`~s3spill.spill.json_spool.LongString` decodes them from the file), and the fields
after it go through the spool as before (a second long string into its file).

What may only be known later is settled before anything is committed: the call's id
(``tool_use_id`` comes after ``tool_response`` in Claude Code's payloads) is asked for once
the output has ended, and the whole payload is checked the same way as its start was (a
key repeated after the string may change the answer); if it does not hold, the upload is
abandoned and the answer is worked out from the whole payload as before, failing open
where it would need the string. A payload that is not JSON fails open, as a small one does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from s3spill.adapters.harness_hooks import (
    ANSWERS,
    Harness,
    HookSpiller,
    _encoded,
    _is_content,
    _str,
    log,
    streams_long_strings,
)
from s3spill.adapters.hook_stream import SpooledPayload, streamed_field
from s3spill.spill.json_spool import PLACEHOLDER_PREFIX as SPOOLED

__all__ = ["answer_streaming", "stream_tool"]


def stream_tool(payload: dict[str, Any], placeholder: str, body_bytes: int, spill: HookSpiller) -> str | None:
    """The tool whose output ``placeholder`` (a string of at least ``body_bytes`` JSON bytes)
    is, when :func:`~s3spill.adapters.harness_hooks.claude_code` answers ``payload`` by
    spilling that string as it is, and nothing before it: then it may be spilled while the
    payload is still being read.

    That is a Bash-like ``PostToolUse`` (``streams_long_strings``, not our own tool, not
    ``never_spill``) with the string as ``tool_response`` or one of its fields, over the hard
    cap whatever its escapes (12 bytes may make one character), and no field before it that
    could be spilled itself (only scalars and strings under every threshold, not a long
    string in the spool), so the order of the spills is what it was.
    """
    path = streamed_field(payload, placeholder)
    tool = payload.get("tool_name")
    if path is None or not streams_long_strings(payload) or not isinstance(tool, str):
        return None
    if tool in spill.own or spill.policy.never_spills(tool):
        return None
    if body_bytes // 12 <= spill.policy.hard_cap_chars:
        return None
    response = payload["tool_response"]
    if isinstance(response, dict):
        if _is_content(response.get("content")):
            return None
        for key, item in response.items():
            if key == path[1]:
                break
            if not (item is None or isinstance(item, bool | int | float) or (
                    isinstance(item, str) and not item.startswith(SPOOLED)
                    and not spill.policy.should_externalize(item, tool))):
                return None
    return tool


class _Overturned(Exception):
    """The whole payload is not answered by spilling the string streamed from its start."""


def answer_streaming(harness: Harness, raw: SpooledPayload, session: str | None,
                     spill_for: Callable[[str], HookSpiller]) -> bytes | None:
    """The answer to a payload paused at its first long string, that string spilled as the
    rest of stdin is read; None: answer the payload as before (read on if need be).

    ``session`` is the operator's (else the payload's); ``spill_for`` opens the
    :class:`HookSpiller` of a session (the caller closes its store).
    """
    prefix = raw.prefix
    assert prefix is not None
    session_id = session or _str(prefix.get("session_id"))
    if not session_id:
        return None
    spill = spill_for(session_id)
    try:
        tool = stream_tool(prefix, raw.live_placeholder, raw.paused_bytes, spill)
        if tool is None:
            return None
        call_id: list[str | None] = [None]

        def verify() -> None:
            """The whole payload, read: is it answered the way its start said?"""
            got = raw.skeleton()
            if got is None:
                raise ValueError("not a UTF-8 JSON object")
            call_id[0] = _str(got.get("tool_use_id"))
            if (stream_tool(got, raw.live_placeholder, streamed.live.body_bytes, spill) != tool
                    or (session or _str(got.get("session_id"))) != session_id):
                raise _Overturned

        streamed = raw.stream(verify)
        out = spill.stream(streamed.live.chunks(raw.piece), tool, lambda: call_id[0])
        live = streamed.live
        if out is not None and live.complete:
            log.info("hooks.spilled", tool=tool, bytes=out.total_bytes, spilled=out.spilled, streamed=True)
            streamed.text = out.context_text
        elif not isinstance(live.error, _Overturned):
            live.drain()
            log.warning("hooks.unreadable_payload", harness=harness, string_bytes=live.body_bytes,
                        detail="not a UTF-8 JSON object; the tool's result goes on unchanged")
            return b""
        payload = raw.decode(streams_long_strings)
        if payload is None or (session or _str(payload.get("session_id"))) != session_id:
            return None  # answered as before, in the session the whole payload names
        return _encoded(ANSWERS[harness](payload, spill))
    finally:
        spill.close()
