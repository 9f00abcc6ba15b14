"""One huge JSON document held in an unlinked file, its long strings decoded piece by piece.

Why: a hook payload of a Bash call that printed 200 MB, or an MCP ``tools/call`` answer
with a 1 GB text, is one JSON document with one huge string in it. Parsing it whole holds
the document, the decoded string and its encoded copy (~3x). Here the document goes to a
temporary file as it arrives (:class:`Spool`), and one pass over the arriving pieces
(:class:`Scanner`) finds every JSON string (escaped backslashes and quotes masked by
``bytes.replace``, then ``find``: C speed; ``ijson`` would not help, it hands over each
string value whole). The document is parsed with each string over ``long_bytes``
replaced by a placeholder, and such a string becomes a :class:`LongString` whose text is
decoded from the file, piece by piece, while the Spiller reads it. A document that is sent
on as it is (:meth:`Spool.expand`) is copied from the file, never decoded.

Used by :mod:`s3spill.adapters.hook_stream` (the hook's stdin) and by the MCP proxy's
upstream channel (:mod:`s3spill.proxy.stdio`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Collection, Iterator
from typing import IO, Any

__all__ = ["LONG_BYTES", "PIECE", "PLACEHOLDER_PREFIX", "LongString", "Scanner", "Spool",
           "ends_in_high_escape"]

#: A JSON string whose raw body is longer than this stays in the file.
LONG_BYTES = 4 << 20
#: Bytes read from the file at a time.
PIECE = 1 << 20
#: The longest escape (``\uXXXX``): a backslash closer than this to a piece's end may be cut.
_ESCAPE = 6
#: A backslash not followed by what makes a JSON escape (or the second of an escaped one).
_NOT_AN_ESCAPE = re.compile(rb'\\(?![nrt"\\/bf]|u[0-9a-fA-F]{4})')
#: A ``\\u`` escape of a high surrogate, which a piece may end in before its low half.
_HIGH_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")
#: How every long string's placeholder in a skeleton starts (then a nonce and its number).
PLACEHOLDER_PREFIX = "\x00s3spill-long:"
#: Bytes a JSON string may not hold raw.
_CONTROL = bytes(range(0x20))


class LongString:
    """A JSON string's raw body, ``[start, end)`` of the spooled file, decoded on demand.

    ``lenient``: bytes that are not UTF-8 decode as Python's ``surrogateescape`` does (what
    the proxy's parser does with a whole line: :mod:`s3spill.proxy.wire`), so that each
    such byte is stored as it came; else as ``json.loads`` of bytes does (``surrogatepass``).
    """

    def __init__(self, file: IO[bytes], start: int, end: int, *, piece: int = PIECE,
                 lenient: bool = False) -> None:
        self.file, self.start, self.end = file, start, end
        self.piece, self.lenient = piece, lenient

    @property
    def min_chars(self) -> int:
        """At least this many characters (an escaped pair of surrogates is 12 bytes for one)."""
        return (self.end - self.start) // 12

    def pieces(self) -> Iterator[str]:
        """The text in pieces cut between escapes, characters and surrogate pairs.

        Each piece is read into one buffer between the quotes ``json.loads`` needs (no
        concatenation): the read, the decode and the Spiller's encode are its only passes.
        """
        fd, offset, carry = self.file.fileno(), self.start, b""
        while offset < self.end:
            n = min(self.piece, self.end - offset)
            buf = bytearray(len(carry) + n + 2)
            buf[0], buf[1:1 + len(carry)] = 0x22, carry
            body_end = 1 + len(carry) + n
            if os.preadv(fd, [memoryview(buf)[1 + len(carry):body_end]], offset) != n:
                raise OSError("the spooled document ended early")
            offset += n
            cut = body_end if offset >= self.end else _cut(buf, 1, body_end)
            carry = bytes(buf[cut:body_end])
            high = ends_in_high_escape(buf, 1, cut) and offset < self.end
            held = bytes(buf[cut - _ESCAPE:cut]) if high else b""
            buf[cut] = 0x22
            del buf[cut + 1:]
            text: str = (json.loads(buf.decode("utf-8", "surrogateescape")) if self.lenient
                         else decode_piece(buf))
            if high:
                text = text[:-1]  # its low half may come next: decode them together
                carry = held + carry
            yield text

    def text(self) -> str:
        return "".join(self.pieces())

    def well_formed(self) -> bool:
        """Is the body a JSON string's: every escape one of JSON's, no raw control character?

        What a parser of the whole document would refuse, found without decoding (the proxy
        hands some documents on from the file, never decoded): piece by piece, cut between
        escapes as :meth:`pieces` cuts, ~3 ms per MiB.
        """
        fd, offset, carry = self.file.fileno(), self.start, b""
        while offset < self.end:
            n = min(self.piece, self.end - offset)
            buf = bytearray(carry)
            buf += os.pread(fd, n, offset)
            offset += n
            cut = len(buf) if offset >= self.end else _cut(buf, 0, len(buf))
            carry = bytes(buf[cut:])
            if not _json_body(bytes(buf[:cut])):
                return False
        return not carry

    def raw(self) -> Iterator[bytes]:
        """The body as it is in the file (JSON-escaped, between its quotes), in pieces."""
        fd = self.file.fileno()
        for offset in range(self.start, self.end, self.piece):
            yield os.pread(fd, min(self.piece, self.end - offset), offset)


def ends_in_high_escape(buf: bytearray, lo: int, cut: int) -> bool:
    """Does the body ``buf[lo:cut]`` (from a token boundary) end in a ``\\uD800``-``\\uDBFF``
    escape, so that the piece's last character is that high surrogate and its low half may
    start the next piece?

    Why not "the last six bytes begin ``\\u``": that backslash may be the second of an
    escaped one (``\\\\ua`` and then a raw lone surrogate, which ``json.loads`` of bytes
    reads): the piece would drop a character that no escape made and decode ``\\ua…`` again.
    """
    at = cut - _ESCAPE
    if at < lo or _HIGH_ESCAPE.fullmatch(buf, at, cut) is None:
        return False
    run = 0
    while at - run >= lo and buf[at - run] == 0x5C:
        run += 1
    return run % 2 == 1


def decode_piece(buf: bytearray | memoryview) -> str:
    """``json.loads(buf)`` of a quoted piece of a string body, by orjson when it can (about half
    the time): it refuses what ``json.loads`` of bytes may still take (lone surrogates, escaped
    or as bytes, which that reads with ``surrogatepass``), and then ``json.loads`` decides, so
    the text, or the error, is what ``json.loads`` gives."""
    import orjson

    try:
        text = orjson.loads(buf)
    except orjson.JSONDecodeError:
        text = json.loads(bytes(buf) if isinstance(buf, memoryview) else buf)
    if not isinstance(text, str):
        raise ValueError("not a JSON string")
    return text


def _json_body(body: bytes) -> bool:
    """No raw control character, and each backslash that starts no JSON escape is the second
    of an escaped backslash (an even run of them ends there); ``body`` starts at a token."""
    if len(body.translate(None, _CONTROL)) != len(body):
        return False
    at = 0
    while (found := _NOT_AN_ESCAPE.search(body, at)) is not None:
        k = j = found.start()
        while j > 0 and body[j - 1] == 0x5C:
            j -= 1
        if (k - j) % 2 == 0:  # an odd run: this backslash starts the escape
            return False
        at = k + 1
    return True


def _cut(buf: bytearray, lo: int, hi: int) -> int:
    """Where the string body ``buf[lo:hi]`` (from a token boundary) may be cut: no escape or
    character split.

    Only the tail is looked at: an escape is at most 6 bytes, so without a backslash in the
    last 12 the end is between tokens; else the last backslash starts an escape when an odd
    run of them ends there (cut before it); else it closes an escaped backslash. Then a
    character cut short at the end is left for the next piece.
    """
    k = buf.rfind(b"\\", max(lo, hi - 2 * _ESCAPE), hi)
    if k >= 0:
        window = buf[max(lo, k - 63):k + 1]  # the run of backslashes ending at k, usually 1
        run = len(window) - len(window.rstrip(b"\\"))
        if run == len(window):
            run = k + 1 - lo - len(buf[lo:k + 1].rstrip(b"\\"))
        if run % 2:
            return k
    m = hi
    for back in range(1, min(4, hi - lo) + 1):
        byte = buf[m - back]
        if byte < 0x80:
            break
        if byte >= 0xC0:
            if back < (2 if byte < 0xE0 else 3 if byte < 0xF0 else 4):
                m -= back
            break
    return m


def _masked_end(buf: bytes | bytearray, i: int, end: int | None = None) -> tuple[int, bool]:
    """:func:`_string_end` the uniform way: escaped backslashes, then escaped quotes, masked
    (same length), so the first quote left closes the string."""
    end = len(buf) if end is None else end
    masked = buf[i:end].replace(b"\\\\", b"__").replace(b'\\"', b"__")
    q = masked.find(b'"')
    if q >= 0:
        return i + q, True
    return end - (1 if masked.endswith(b"\\") else 0), False


def _string_end(buf: bytes | bytearray, i: int, end: int | None = None) -> tuple[int, bool]:
    """(where the string body from ``i`` ends in ``buf[:end]``, whether its closing quote is there).

    Without a closing quote the end leaves out a backslash that may start an escape, for
    the next piece. ``find`` for each quote, checking the backslashes before it; a piece with
    many escaped quotes is handed to :func:`_masked_end`.
    """
    end = len(buf) if end is None else end
    q = buf.find(b'"', i, end)
    for _ in range(64):
        if q < 0:
            break
        k = q - 1
        while k >= i and buf[k] == 0x5C:
            k -= 1
        if (q - 1 - k) % 2 == 0:
            return q, True
        q = buf.find(b'"', q + 1, end)
    else:
        return _masked_end(buf, i, end)
    return _masked_end(buf, i, end) if buf.endswith(b"\\", i, end) else (end, False)


class Scanner:
    """The document, fed in pieces, with each long string replaced by a placeholder, and the
    long strings' spans (offsets of their bodies in the document)."""

    def __init__(self, placeholder: Callable[[int], str], long_bytes: int = LONG_BYTES,
                 on_long: Callable[[bytes], bool] | None = None) -> None:
        self.placeholder, self.long_bytes = placeholder, long_bytes
        self.skeleton, self._body = bytearray(), bytearray()
        self.spans: list[tuple[int, int]] = []
        self._base, self._carry, self._in_str, self._start, self._long = 0, b"", False, 0, False
        #: Asked with the skeleton so far when a string turns long and goes on past the piece:
        #: True pauses the scan there, its body so far kept (:meth:`Spool.live`).
        self.on_long = on_long
        self.paused = False
        #: What the long string being closed is replaced by when it is not in the file (live).
        self.live_placeholder: str | None = None

    def feed(self, chunk: bytes) -> None:
        if chunk:
            self._step(chunk)

    def finish(self) -> tuple[bytes, list[tuple[int, int]]] | None:
        """(skeleton, spans); None when the document ends inside a string (not JSON)."""
        self._step(b"")
        return None if self._in_str else (bytes(self.skeleton), self.spans)

    def _step(self, chunk: bytes) -> None:
        buf, i = self._carry + chunk, 0
        self._carry = b""
        skeleton, body = self.skeleton, self._body
        while i < len(buf):
            if not self._in_str:
                j = buf.find(b'"', i)
                if j < 0:
                    skeleton += buf[i:]
                    break
                skeleton += buf[i:j]
                self._in_str, self._start, self._long, i = True, self._base + j + 1, False, j + 1
                body.clear()
                continue
            m, closed = _string_end(buf, i)
            if not self._long:
                body += buf[i:m]
                if len(body) > self.long_bytes:
                    self._long = True
                    if not closed and self.on_long is not None and self.on_long(bytes(skeleton)):
                        self.paused = True
                    else:
                        body.clear()
            if closed:
                if self.live_placeholder is not None:
                    skeleton += json.dumps(self.live_placeholder).encode()
                    self.live_placeholder = None
                elif self._long:
                    skeleton += json.dumps(self.placeholder(len(self.spans))).encode()
                    self.spans.append((self._start, self._base + m))
                else:
                    skeleton += b'"' + body + b'"'
                self._in_str, i = False, m + 1
                continue
            self._carry = buf[m:]
            break
        self._base += len(buf) - len(self._carry)


class Spool:
    """A document written to an unlinked temporary file as it arrives, scanned on the way.

    ``feed`` each piece, then ``finish``; :attr:`scanned` is then the skeleton and the long
    strings' spans (None: not JSON).
    """

    def __init__(self, *, long_bytes: int | None = None, piece: int | None = None,
                 lenient: bool = False, on_long: Callable[[bytes], bool] | None = None) -> None:
        self.file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as its LongStrings
        self.size = 0
        self.piece, self.lenient = PIECE if piece is None else piece, lenient
        self._nonce = secrets.token_hex(8)
        self._scanner = Scanner(self.placeholder, LONG_BYTES if long_bytes is None else long_bytes, on_long)
        #: The document with placeholders and the long strings' spans (None: not JSON).
        self.scanned: tuple[bytes, list[tuple[int, int]]] | None = None
        #: Bytes of the document that are not in the file (a string taken over: :meth:`take_over`).
        self.holes = 0

    @property
    def paused(self) -> bool:
        """Did the scan stop at a long string (``on_long`` said so)? Then :meth:`resume`, or
        :meth:`take_over` it, before feeding on."""
        return self._scanner.paused

    def resume(self) -> None:
        """Go on as if the scan had not paused: the long string is in the file, as any other."""
        self._scanner.paused = False
        self._scanner._body.clear()

    def take_over(self) -> tuple[bytearray, bytes, int]:
        """The paused long string's body so far, the bytes after it not scanned yet (a
        backslash that may start an escape) and where the body starts in the document.

        The caller reads the rest of the body itself (the file does not get it), then
        gives the document back from the closing quote on (:meth:`hand_back`).
        """
        scanner = self._scanner
        body, carry = scanner._body, scanner._carry
        scanner._body, scanner._carry, scanner.paused = bytearray(), b"", False
        return body, carry, scanner._start

    def hand_back(self, rest: bytes, at: int, placeholder: str) -> None:
        """The document from the closing quote of the string taken over (``rest``, at offset
        ``at``) on: in the file where it belongs, the string replaced by ``placeholder``."""
        scanner = self._scanner
        scanner._in_str, scanner._long, scanner._base = True, True, at
        scanner.live_placeholder = placeholder
        self.holes += at - self.size
        self.file.seek(at)
        self.size = at
        self.feed(rest)

    def __len__(self) -> int:
        return self.size

    @property
    def held(self) -> int:
        """Bytes of the document held in memory (its skeleton so far)."""
        return len(self._scanner.skeleton)

    def feed(self, piece: bytes) -> None:
        self.file.write(piece)
        self.size += len(piece)
        self._scanner.feed(piece)

    def finish(self) -> None:
        self.file.flush()
        self.scanned = self._scanner.finish()

    def placeholder(self, n: int) -> str:
        return f"{PLACEHOLDER_PREFIX}{self._nonce}:{n}"

    def longs(self) -> dict[str, LongString]:
        """Each placeholder and the string it stands for."""
        spans = self.scanned[1] if self.scanned is not None else []
        return {self.placeholder(n): LongString(self.file, a, b, piece=self.piece, lenient=self.lenient)
                for n, (a, b) in enumerate(spans)}

    def raw(self) -> bytes:
        """The whole document (for a reader that needs it all)."""
        if self.holes:
            raise ValueError("a string of this document was taken over, not spooled")
        return os.pread(self.file.fileno(), self.size, 0)

    def materialized(self, value: Any, keep: Collection[str] = ()) -> Any:
        """``value`` (parsed from the skeleton) with every placeholder, key or value, read back
        as its ``str`` (the document as a plain parser would give it), but those in ``keep``."""
        longs = self.longs()
        if not longs:
            return value
        return _replace(value, lambda s: longs[s].text() if s in longs and s not in keep else s)

    def expand(self, encoded: bytes) -> Iterator[bytes]:
        """``encoded`` (JSON of a value with placeholders in it) with each placeholder's JSON
        replaced by its string as it is in the file: the document's bytes, never decoded."""
        longs = self.longs()
        at = 0
        for name, long in sorted(((_encoded(name), long) for name, long in longs.items()),
                                 key=lambda item: encoded.find(item[0])):
            k = encoded.find(name, at)
            if k < 0:
                continue
            yield encoded[at:k] + b'"'
            yield from long.raw()
            yield b'"'
            at = k + len(name)
        yield encoded[at:]

    def close(self) -> None:
        self.file.close()


def _encoded(placeholder: str) -> bytes:
    """A placeholder as the proxy's encoder writes it (orjson: ``\\x00`` as ``\\u0000``)."""
    return b'"\\u0000' + placeholder[1:].encode() + b'"'


def _replace(value: Any, swap: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        return swap(value)
    if isinstance(value, list):
        return [_replace(item, swap) for item in value]
    if isinstance(value, dict):
        return {swap(key): _replace(item, swap) for key, item in value.items()}
    return value
