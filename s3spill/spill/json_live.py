"""A long JSON string decoded as the document arrives, never written to the spool's file.

Why: the hook's huge payload is one JSON document with one huge string in it (a Bash call's
``stdout``). Spooling it to a file and decoding it from there costs a write and a read of
the whole payload on top of the spill (issue 35). When the scan of a :class:`Spool` pauses
at a long string (its ``on_long`` said so), :class:`LiveString` takes the body over: its
:meth:`~LiveString.pieces` read the stream only as far as the next piece needs and decode
each piece exactly as :meth:`LongString.pieces` decodes it from the file (the same cuts
between escapes, characters and surrogate pairs, at the same offsets of the body), so
whoever consumes them gets the same pieces in the same order. After the last piece the
rest of the document goes into the spool as before (a later long string into its file),
and ``done`` is called before the iterator ends: it may raise, and a Spiller reading the
pieces then abandons what it stored (nothing committed, nothing pointed to).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Protocol

from s3spill.spill.json_spool import _ESCAPE, PIECE, Spool, _cut, _string_end, decode_piece

__all__ = ["LiveString", "Readable"]


class Readable(Protocol):
    def read(self, n: int, /) -> bytes: ...


class LiveString:
    """The string a paused :class:`Spool` stopped at, its body read from ``stream``."""

    def __init__(self, spool: Spool, stream: Readable, placeholder: str, done: Callable[[], None], *,
                 piece: int = PIECE, read: int = PIECE) -> None:
        self.spool, self.stream, self.placeholder, self.done = spool, stream, placeholder, done
        self.piece, self.read = piece, read
        #: Bytes of the body (JSON-escaped) read so far; its length once the string closed.
        self.body_bytes = 0
        #: The document was read to its end and ``done`` returned.
        self.complete = False
        #: Why the pieces stopped early (the body is not JSON, ``done`` refused, ...).
        self.error: BaseException | None = None
        #: The body read and not decoded yet: views of what the stream gave (no copy).
        self._chunks: deque[memoryview] = deque()
        self._ready = 0
        self._carry = b""
        self._rest: bytes | None = None
        self._start = 0

    def _more(self) -> None:
        """One more read of the stream into the body (and what follows it, once it closed)."""
        piece = self.stream.read(self.read)
        if not piece:
            raise ValueError("the document ends inside a string")
        buf = self._carry + piece if self._carry else piece
        end, closed = _string_end(buf, 0)
        if end:
            self._chunks.append(memoryview(buf)[:end])
        self._ready += end
        self.body_bytes += end
        if closed:
            self._rest, self._carry = buf[end:], b""
        else:
            self._carry = buf[end:]

    def _take(self, buf: bytearray, at: int, n: int) -> None:
        """The next ``n`` bytes of the body into ``buf[at:at + n]`` (same length: no resize)."""
        chunks = self._chunks
        self._ready -= n
        while n:
            head = chunks[0]
            k = min(len(head), n)
            buf[at:at + k] = head[:k]
            if k == len(head):
                chunks.popleft()
            else:
                chunks[0] = head[k:]
            at, n = at + k, n - k

    def pieces(self) -> Iterator[str]:
        """The text in pieces, as :meth:`LongString.pieces` gives it; then the document's rest."""
        try:
            yield from self._pieces()
            self._finish()
        except BaseException as exc:
            self.error = exc
            raise

    def _pieces(self) -> Iterator[str]:
        """:meth:`LongString.pieces`, the body read from the stream; one buffer for every piece
        (a new one each time costs its pages' first touch, ~0.1 s per 200 MB here)."""
        first, self._carry, self._start = self.spool.take_over()
        if first:
            self._chunks.append(memoryview(first))
        self._ready = self.body_bytes = len(first)
        size, carry, buf = self.piece, b"", bytearray()
        while True:
            while self._ready <= size and self._rest is None:
                self._more()
            last = self._rest is not None and self._ready <= size
            n = min(size, self._ready)
            body_end = 1 + len(carry) + n
            if len(buf) > body_end + 1:
                del buf[body_end + 1:]
            elif len(buf) < body_end + 1:
                buf.extend(bytes(body_end + 1 - len(buf)))
            buf[0], buf[1:1 + len(carry)] = 0x22, carry
            self._take(buf, 1 + len(carry), n)
            cut = body_end if last else _cut(buf, 1, body_end)
            carry = bytes(buf[cut:body_end])
            high = bytes(buf[cut - _ESCAPE:cut]) if not last else b""
            buf[cut] = 0x22
            del buf[cut + 1:]
            text = decode_piece(buf)
            if high[:2] == b"\\u" and text and "\ud800" <= text[-1] <= "\udbff":
                text = text[:-1]  # its low half may come next: decode them together
                carry = high + carry
            yield text
            if last:
                return

    def _finish(self) -> None:
        """The document after the string: into the spool, scanned; then ``done``."""
        assert self._rest is not None
        self.spool.hand_back(self._rest, self._start + self.body_bytes, self.placeholder)
        self._rest = None
        while piece := self.stream.read(self.read):
            self.spool.feed(piece)
        self.spool.finish()
        self.done()
        self.complete = True

    def drain(self) -> None:
        """Read what is left of the stream, unused (the pieces stopped early): the harness
        that writes the payload is not left blocked or cut off."""
        while self.stream.read(self.read):
            pass
