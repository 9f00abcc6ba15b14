"""A long JSON string decoded as the document arrives, never written to the spool's file.

Why: the hook's huge payload is one JSON document with one huge string in it (a Bash call's
``stdout``). Spooling it to a file and decoding it from there costs a write and a read of
the whole payload on top of the spill (issue 35). When the scan of a :class:`Spool` pauses
at a long string (its ``on_long`` said so), :class:`LiveString` takes the body over: its
:meth:`~LiveString.pieces` read the stream only as far as the next piece needs and decode
each piece exactly as :meth:`LongString.pieces` decodes it from the file (the same cuts
between escapes, characters and surrogate pairs, at the same offsets of the body), so
whoever consumes them gets the same pieces in the same order. Each piece is read straight
into the buffer the decoder takes (``readinto``: the stream's bytes are copied by the
kernel only), and :meth:`~LiveString.chunks` gives their UTF-8 in chunks of the store's
index size, which its writer then takes as they are. After the last piece the rest of
the document goes into the spool as before (a later long string into its file), and
``done`` is called before the iterator ends: it may raise, and a Spiller reading the
pieces then abandons what it stored (nothing committed, nothing pointed to).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Protocol

from s3spill.context.utf8 import to_bytes
from s3spill.spill.json_spool import (
    _ESCAPE,
    PIECE,
    Spool,
    _cut,
    _string_end,
    decode_piece,
    ends_in_high_escape,
)
from s3spill.spill.source import CHUNK_BYTES

__all__ = ["LiveString", "Readable", "read_into", "utf8_chunks"]

#: Most bytes a piece leaves to the next: an escape cut short (its backslash is in the last
#: 12 bytes) or a character cut short, and a high surrogate's escape kept for its low half.
_CARRY = 4 * _ESCAPE


class Readable(Protocol):
    def read(self, n: int, /) -> bytes: ...


def read_into(stream: Readable, view: memoryview) -> int:
    """One read of ``stream`` into ``view`` (``readinto`` where the stream has it, else
    ``read`` and a copy); the bytes read, 0 at its end."""
    into = getattr(stream, "readinto", None)
    if into is not None:
        try:
            got: int | None = into(view)
        except NotImplementedError:  # a raw stream that only implements read
            pass
        else:
            return got or 0
    piece = stream.read(len(view))
    view[:len(piece)] = piece
    return len(piece)


def utf8_chunks(texts: Iterator[str], size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The UTF-8 of ``texts`` (each as :func:`~s3spill.context.utf8.to_bytes` gives it, as the
    Spiller would store it) in chunks of exactly ``size`` bytes but the last, each copied once.

    The store's writer cuts its index chunks (1 MiB) from what it is fed: chunks of that size
    it takes as they are, any other it copies into its buffer, out of it, and shifts the
    rest (~0.18 s per 200 MiB here, on its thread).
    """
    parts: list[memoryview] = []
    held = 0
    for text in texts:
        data = memoryview(to_bytes(text))
        del text
        while held + len(data) >= size:
            k = size - held
            parts.append(data[:k])
            yield b"".join(parts)
            parts, held, data = [], 0, data[k:]
        if data:
            parts.append(data)
            held += len(data)
    if parts:
        yield b"".join(parts)


class LiveString:
    """The string a paused :class:`Spool` stopped at, its body read from ``stream``."""

    def __init__(self, spool: Spool, stream: Readable, placeholder: str, done: Callable[[], None], *,
                 piece: int = PIECE, read: int = PIECE) -> None:
        self.spool, self.stream, self.placeholder, self.done = spool, stream, placeholder, done
        self.piece, self.read = piece, read
        #: Bytes of the body (JSON-escaped) decoded so far; its length once the string closed.
        self.body_bytes = 0
        #: The document was read to its end and ``done`` returned.
        self.complete = False
        #: Why the pieces stopped early (the body is not JSON, ``done`` refused, ...).
        self.error: BaseException | None = None
        #: What the spool had read of the document past the body's start, not decoded yet.
        self._held: deque[memoryview] = deque()
        self._rest: bytes | None = None
        self._start = 0

    def _fill(self, view: memoryview) -> int:
        """The document's next bytes into ``view``, until it is full or the document ends."""
        got = 0
        while got < len(view):
            if self._held:
                head = self._held[0]
                k = min(len(head), len(view) - got)
                view[got:got + k] = head[:k]
                if k == len(head):
                    self._held.popleft()
                else:
                    self._held[0] = head[k:]
                got += k
                continue
            k = read_into(self.stream, view[got:])
            if not k:
                break
            got += k
        return got

    def pieces(self) -> Iterator[str]:
        """The text in pieces, as :meth:`LongString.pieces` gives it; then the document's rest."""
        try:
            yield from self._pieces()
            self._finish()
        except BaseException as exc:
            self.error = exc
            raise

    def chunks(self, size: int = CHUNK_BYTES) -> Iterator[bytes]:
        """:meth:`pieces` as the UTF-8 the Spiller stores, in chunks of ``size`` (:func:`utf8_chunks`)."""
        return utf8_chunks(self.pieces(), size)

    def _pieces(self) -> Iterator[str]:
        """:meth:`LongString.pieces`, the body read from the stream into one buffer reused for
        every piece (a new one each time costs its pages' first touch, ~0.1 s per 200 MB here).

        The buffer holds the quote ``json.loads`` needs, the bytes the last piece left, the
        piece's own bytes and one byte more, read ahead: a piece is the last one when the
        string closes within it or on that byte, as :meth:`LongString.pieces` knows from the
        string's end. The scan for the closing quote starts at the bytes left over, which
        start between escapes (where a piece is cut).
        """
        first, carry, self._start = self.spool.take_over()
        self._held.extend(memoryview(part) for part in (first, carry) if part)
        size = self.piece
        buf = bytearray(_CARRY + size + 2)
        view = memoryview(buf)
        buf[0] = 0x22
        left = ahead = 0  # bytes left by the last piece at buf[1:], then those read ahead
        while True:
            lo = 1 + left
            top = lo + size + 1
            hi = lo + ahead + self._fill(view[lo + ahead:top])
            end, last = _string_end(buf, 1, hi)
            if not last and hi < top:
                raise ValueError("the document ends inside a string")
            body_end = end if last else lo + size
            self.body_bytes += body_end - lo
            cut = body_end if last else _cut(buf, 1, body_end)
            tail = bytes(buf[cut:hi])  # left to the next piece, then read ahead (the last: the rest)
            left = body_end - cut
            high = not last and ends_in_high_escape(buf, 1, cut)
            held = bytes(buf[cut - _ESCAPE:cut]) if high else b""
            buf[cut] = 0x22
            text = decode_piece(view[:cut + 1])
            if high:
                text = text[:-1]  # its low half may come next: decode them together
                tail, left = held + tail, left + len(held)
            if last:
                self._rest = tail
                yield text
                return
            buf[1:1 + len(tail)] = tail
            ahead = len(tail) - left
            yield text
            del text

    def _finish(self) -> None:
        """The document after the string: into the spool, scanned; then ``done``."""
        assert self._rest is not None
        rest = self._rest + b"".join(self._held)  # nothing held: the spool had only body bytes
        self._rest = None
        self._held.clear()
        self.spool.hand_back(rest, self._start + self.body_bytes, self.placeholder)
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
