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

Read with a ``pause`` test (Claude Code's hook), the reading stops at the first long string
in such a place; :mod:`s3spill.adapters.hook_streaming` then spills that string while the
rest of stdin is read (:class:`Streamed`: it never reaches the file), or reads on as here.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import IO, Any

from s3spill.spill.json_live import LiveString, read_into
from s3spill.spill.json_spool import LONG_BYTES, PIECE, LongString, Spool, _string_end

__all__ = ["LONG_BYTES", "SPOOL_BYTES", "LiveString", "LongString", "SpooledPayload", "Streamed",
           "read_payload"]

#: Payloads up to this many bytes are read into memory whole (the old, simple way).
SPOOL_BYTES = 8 << 20
#: The reading pauses at a long string only while the skeleton before it is at most this long.
PREFIX_BYTES = 1 << 20
_PIECE = PIECE


class Streamed:
    """Where the payload's string taken over by :meth:`SpooledPayload.stream` was; what the
    answer made of it is its :attr:`text` (None: nothing, so an answer that needs it fails open)."""

    def __init__(self, live: LiveString) -> None:
        self.live = live
        self.text: str | None = None


class SpooledPayload(Spool):
    """A payload over :data:`SPOOL_BYTES`, in an unlinked temporary file.

    When read with a ``pause`` test, the scan may stop at the first long string that test
    accepts: :attr:`prefix` is then the payload up to it (that string a placeholder), and
    the caller either streams that string (:meth:`stream`: it never reaches the file) or
    lets the payload be read on as before (any other method does that first).
    """

    def __init__(self, *, pause: Callable[[dict[str, Any], str], bool] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(on_long=self._on_long if pause is not None else None, **kwargs)
        self._pause = pause
        self.rest: _Rest | None = None
        #: The payload before the long string the scan paused at, which is :attr:`live_placeholder`.
        self.prefix: dict[str, Any] | None = None
        self.live_placeholder = self.placeholder(-1)
        #: JSON bytes of that string's body read before the pause (it has at least these).
        self.paused_bytes = 0
        self.streamed: Streamed | None = None

    def _on_long(self, skeleton: bytes) -> bool:
        """Pause at the first long string the payload before which passes ``pause`` (once).

        Not past :data:`PREFIX_BYTES` of skeleton (a harness's payload has a few hundred
        bytes before its output): each try parses the skeleton so far.
        """
        if len(skeleton) > PREFIX_BYTES:
            self._pause = self._scanner.on_long = None
            return False
        prefix = _prefix(skeleton, self.live_placeholder)
        if self._pause is None or prefix is None or not self._pause(prefix, self.live_placeholder):
            return False
        self._pause = self._scanner.on_long = None
        self.prefix, self.paused_bytes = prefix, len(self._scanner._body)
        return True

    def read_on(self) -> None:
        """Read the rest of a paused payload into the spool, as if it had not paused."""
        if self.rest is None:
            return
        rest, self.rest = self.rest, None
        self.resume()
        while piece := rest.read(_PIECE):
            self.feed(piece)
        self.finish()

    def stream(self, done: Callable[[], None]) -> Streamed:
        """The paused long string, taken over: its pieces are decoded as the rest of stdin is
        read (:class:`~s3spill.spill.json_live.LiveString`), and :meth:`decode` then puts this
        :class:`Streamed` where it was."""
        assert self.rest is not None and self.streamed is None
        live = LiveString(self, self.rest, self.live_placeholder, done, piece=self.piece, read=_PIECE)
        self.rest = None
        self.streamed = Streamed(live)
        return self.streamed

    def _skeleton(self) -> tuple[dict[str, Any], list[tuple[int, int]]] | None:
        """The payload with placeholders for its long strings, and their spans (None: no JSON object)."""
        self.read_on()
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

    def skeleton(self) -> dict[str, Any] | None:
        """The payload with placeholders for its long strings (None: not a JSON object)."""
        got = self._skeleton()
        return got[0] if got is not None else None

    def decode(self, keep: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
        """The payload as a dict (None: not a JSON object); its long strings as :class:`LongString`
        where ``keep(payload)`` says the answer streams them, else read back as ``str``."""
        got = self._skeleton()
        if got is None:
            return None
        payload = got[0]
        longs: dict[str, LongString | Streamed] = dict(self.longs())
        if self.streamed is not None:
            longs[self.live_placeholder] = self.streamed
        if not longs:
            return payload
        streamed = _materialize(payload, longs, depth=0, keep_at=(1, 2) if keep(payload) else ())
        return streamed if isinstance(streamed, dict) else None


def _materialize(value: Any, longs: dict[str, LongString | Streamed], depth: int,
                 keep_at: tuple[int, ...]) -> Any:
    """``value`` with placeholders replaced: a LongString at ``tool_response`` (depth 1 and its
    fields, depth 2), the decoded ``str`` anywhere else; the :class:`Streamed` string only
    where it was streamed for (its text is gone: anywhere else the answer fails open)."""
    if isinstance(value, str):
        long = longs.get(value)
        if long is None:
            return value
        if isinstance(long, Streamed):
            if depth in keep_at:
                return long
            raise ValueError("the streamed string is needed whole")
        return long if depth in keep_at else long.text()
    if isinstance(value, list):
        return [_materialize(item, longs, depth + 1, ()) for item in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = _text(longs[key]) if key in longs else key
            inner = keep_at if (depth == 0 and name == "tool_response") or depth == 1 else ()
            out[name] = _materialize(item, longs, depth + 1, inner)
        return out
    return value


def _text(long: LongString | Streamed) -> str:
    if isinstance(long, Streamed):
        raise ValueError("the streamed string is needed whole")
    return long.text()


#: The bytes of a JSON document outside strings that open or close a value, and a string's quote.
_STRUCTURE = re.compile(rb'["\[\]{}]')


def _prefix(skeleton: bytes, placeholder: str) -> dict[str, Any] | None:
    """The document whose skeleton starts with ``skeleton`` and goes on with a string, closed
    right after it: that string is ``placeholder`` (None: no JSON object that way, e.g. the
    string is a key)."""
    closers: list[bytes] = []
    at = 0
    while (found := _STRUCTURE.search(skeleton, at)) is not None:
        char = found.group()
        if char == b'"':
            end, closed = _string_end(skeleton, found.end())
            if not closed:
                return None
            at = end + 1
            continue
        if char in b"[{":
            closers.append(b"]" if char == b"[" else b"}")
        elif not closers or closers.pop() != char:
            return None
        at = found.end()
    try:
        doc = json.loads(skeleton + json.dumps(placeholder).encode() + b"".join(reversed(closers)))
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


class _Rest:
    """What is left of the payload: the part of the head not scanned yet, then stdin."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        self.head, self.stream, self.at = head, stream, 0

    def read(self, n: int) -> bytes:
        if self.at < len(self.head):
            piece = self.head[self.at:self.at + n]
            self.at += len(piece)
            if self.at >= len(self.head):
                self.head = b""
                self.at = 0
            return piece
        return self.stream.read(n)

    def readinto(self, view: memoryview) -> int:
        """:meth:`read` into ``view`` (stdin's ``readinto``: no copy of its bytes)."""
        if self.at < len(self.head):
            k = min(len(view), len(self.head) - self.at)
            view[:k] = memoryview(self.head)[self.at:self.at + k]
            self.at += k
            if self.at >= len(self.head):
                self.head = b""
                self.at = 0
            return k
        return read_into(self.stream, view)


def streamed_field(payload: dict[str, Any], placeholder: str) -> tuple[str, ...] | None:
    """Where ``placeholder`` is in a ``PostToolUse`` payload, if it is ``tool_response`` or one
    of its fields (where the answer spills a string as it is); None anywhere else."""
    if payload.get("hook_event_name") != "PostToolUse":
        return None
    response = payload.get("tool_response")
    if response == placeholder:
        return ("tool_response",)
    if isinstance(response, dict):
        keys = [key for key, value in response.items() if value == placeholder]
        if len(keys) == 1:
            return ("tool_response", keys[0])
    return None


def read_payload(prefix: bytes, stdin: IO[bytes] | None = None,
                 pause: Callable[[dict[str, Any], str], bool] | None = None) -> bytes | SpooledPayload:
    """``prefix`` and the rest of stdin: bytes up to :data:`SPOOL_BYTES`, else spooled to a file
    (and scanned for its strings on the way, so the file is read again only for them).

    ``pause``: asked at each long string that goes on past the piece it turns long in,
    with the payload before it (that string a placeholder, the second argument), until it
    says True: the reading stops there (:class:`SpooledPayload`, its ``prefix`` set), for
    the caller to stream that string.
    """
    stream = stdin if stdin is not None else sys.stdin.buffer
    head = bytearray(prefix)
    while len(head) <= SPOOL_BYTES:
        piece = stream.read(SPOOL_BYTES + 1 - len(head))
        if not piece:
            return bytes(head)
        head += piece
    spooled = SpooledPayload(long_bytes=LONG_BYTES, piece=_PIECE, pause=pause)
    rest = _Rest(bytes(head), stream)
    head.clear()
    spooled.rest = rest
    while piece := rest.read(_PIECE):
        spooled.feed(piece)
        if spooled.paused:
            return spooled
    spooled.rest = None
    spooled.finish()
    return spooled
