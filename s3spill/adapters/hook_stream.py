"""A huge hook payload read without holding it: spooled to a file, its long strings streamed.

Why: a Claude Code ``PostToolUse`` payload of a Bash call that printed 200 MB is one
JSON document with one 200 MB string in it. Reading it whole, decoding it and encoding
the string again held ~3x the payload (+606 MiB). Here stdin goes to an unlinked
temporary file in 1 MiB pieces, scanned on the way (:mod:`s3spill.spill.json_spool`, which
the MCP proxy shares); the document is parsed with each string over :data:`LONG_BYTES`
replaced by a placeholder, and that string becomes a :class:`LongString` whose text is
decoded from the file, piece by piece, while the Spiller reads it. A payload up to
:data:`SPOOL_BYTES` is read whole, exactly as before. Only where the hook's answer
spills a string as it is (a Bash-like ``tool_response`` and its direct fields) is a
:class:`LongString` left in the payload; anywhere else it is read back into a ``str``,
so every other answer is what it was.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable
from typing import IO, Any

from s3spill.spill.json_spool import LONG_BYTES, PIECE, LongString, Spool

__all__ = ["LONG_BYTES", "SPOOL_BYTES", "LongString", "SpooledPayload", "read_payload"]

#: Payloads up to this many bytes are read into memory whole (the old, simple way).
SPOOL_BYTES = 8 << 20
_PIECE = PIECE


class SpooledPayload(Spool):
    """A payload over :data:`SPOOL_BYTES`, in an unlinked temporary file."""

    def _skeleton(self) -> tuple[dict[str, Any], list[tuple[int, int]]] | None:
        """The payload with placeholders for its long strings, and their spans (None: no JSON object)."""
        if self.scanned is None:
            return None
        skeleton, spans = self.scanned
        try:
            payload = json.loads(skeleton)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None
        return (payload, spans) if isinstance(payload, dict) else None

    def event(self) -> str | None:
        """The payload's ``hook_event_name`` (None: none, or not a JSON object)."""
        got = self._skeleton()
        name = got[0].get("hook_event_name") if got is not None else None
        return name if isinstance(name, str) else None

    def decode(self, keep: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        """The payload as a dict (None: not a JSON object); its long strings as :class:`LongString`
        where ``keep(payload)`` says the answer streams them, else read back as ``str``."""
        got = self._skeleton()
        if got is None:
            return None
        payload = got[0]
        longs = self.longs()
        if not longs:
            return payload
        streamed = _materialize(payload, longs, depth=0, keep_at=(1, 2) if keep(payload) else ())
        return streamed if isinstance(streamed, dict) else None


def _materialize(value: Any, longs: dict[str, LongString], depth: int, keep_at: tuple[int, ...]) -> Any:
    """``value`` with placeholders replaced: a LongString at ``tool_response`` (depth 1 and its
    fields, depth 2), the decoded ``str`` anywhere else."""
    if isinstance(value, str):
        long = longs.get(value)
        if long is None:
            return value
        return long if depth in keep_at else long.text()
    if isinstance(value, list):
        return [_materialize(item, longs, depth + 1, ()) for item in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = longs[key].text() if key in longs else key
            inner = keep_at if (depth == 0 and name == "tool_response") or depth == 1 else ()
            out[name] = _materialize(item, longs, depth + 1, inner)
        return out
    return value


def read_payload(prefix: bytes, stdin: IO[bytes] | None = None) -> bytes | SpooledPayload:
    """``prefix`` and the rest of stdin: bytes up to :data:`SPOOL_BYTES`, else spooled to a file
    (and scanned for its strings on the way, so the file is read again only for them)."""
    stream = stdin if stdin is not None else sys.stdin.buffer
    head = bytearray(prefix)
    while len(head) <= SPOOL_BYTES:
        piece = stream.read(SPOOL_BYTES + 1 - len(head))
        if not piece:
            return bytes(head)
        head += piece
    spooled = SpooledPayload(long_bytes=LONG_BYTES, piece=_PIECE)
    first = bytes(head)
    head.clear()
    for piece in itertools.chain((first[n:n + _PIECE] for n in range(0, len(first), _PIECE)),
                                 iter(lambda: stream.read(_PIECE), b"")):
        spooled.feed(piece)
    spooled.finish()
    return spooled
