"""A huge hook payload read without holding it: spooled to a file, its long strings streamed.

Why: a Claude Code ``PostToolUse`` payload of a Bash call that printed 200 MB is one
JSON document with one 200 MB string in it. Reading it whole, decoding it and encoding
the string again held ~3x the payload (+606 MiB). Here stdin goes to an unlinked
temporary file in 1 MiB pieces; one pass finds every JSON string (escaped backslashes and quotes
masked by ``bytes.replace``, then ``find``: C speed; ``ijson`` would not help: it hands over each string value
whole); the document is parsed with each string over :data:`LONG_BYTES` replaced by a
placeholder, and that string becomes a :class:`LongString` whose text is decoded from
the file, piece by piece, while the Spiller reads it. A payload up to
:data:`SPOOL_BYTES` is read whole, exactly as before. Only where the hook's answer
spills a string as it is (a Bash-like ``tool_response`` and its direct fields) is a
:class:`LongString` left in the payload; anywhere else it is read back into a ``str``,
so every other answer is what it was.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

__all__ = ["LONG_BYTES", "SPOOL_BYTES", "LongString", "SpooledPayload", "read_payload"]

#: Payloads up to this many bytes are read into memory whole (the old, simple way).
SPOOL_BYTES = 8 << 20
#: A JSON string whose raw body is longer than this stays in the file.
LONG_BYTES = 4 << 20
_PIECE = 1 << 20
#: The longest escape (``\uXXXX``): a backslash closer than this to a piece's end may be cut.
_ESCAPE = 6


class LongString:
    """A JSON string's raw body, ``[start, end)`` of the spooled file, decoded on demand."""

    def __init__(self, file: IO[bytes], start: int, end: int) -> None:
        self.file, self.start, self.end = file, start, end

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
            n = min(_PIECE, self.end - offset)
            buf = bytearray(len(carry) + n + 2)
            buf[0], buf[1:1 + len(carry)] = 0x22, carry
            body_end = 1 + len(carry) + n
            if os.preadv(fd, [memoryview(buf)[1 + len(carry):body_end]], offset) != n:
                raise OSError("the spooled payload ended early")
            offset += n
            cut = body_end if offset >= self.end else _cut(buf, 1, body_end)
            carry = bytes(buf[cut:body_end])
            high = bytes(buf[cut - _ESCAPE:cut]) if offset < self.end else b""
            buf[cut] = 0x22
            del buf[cut + 1:]
            text: str = json.loads(buf)
            if high[:2] == b"\\u" and text and "\ud800" <= text[-1] <= "\udbff":
                text = text[:-1]  # its low half may come next: decode them together
                carry = high + carry
            yield text

    def text(self) -> str:
        return "".join(self.pieces())


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


class SpooledPayload:
    """A payload over :data:`SPOOL_BYTES`, in an unlinked temporary file."""

    def __init__(self, file: IO[bytes], size: int) -> None:
        self.file, self.size = file, size
        self._nonce = secrets.token_hex(8)
        #: The document with placeholders and the long strings' spans (None: not JSON).
        self.scanned: tuple[bytes, list[tuple[int, int]]] | None = None

    def __len__(self) -> int:
        return self.size

    def raw(self) -> bytes:
        """The whole payload (for an answer that needs it all, as before)."""
        return os.pread(self.file.fileno(), self.size, 0)

    def placeholder(self, n: int) -> str:
        return f"\x00s3spill-long:{self._nonce}:{n}"

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
        payload, spans = got
        longs = {self.placeholder(n): LongString(self.file, a, b) for n, (a, b) in enumerate(spans)}
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


def _masked_end(buf: bytes, i: int) -> tuple[int, bool]:
    """:func:`_string_end` the uniform way: escaped backslashes, then escaped quotes, masked
    (same length), so the first quote left closes the string."""
    masked = buf[i:].replace(b"\\\\", b"__").replace(b'\\"', b"__")
    q = masked.find(b'"')
    if q >= 0:
        return i + q, True
    return len(buf) - (1 if masked.endswith(b"\\") else 0), False


def _string_end(buf: bytes, i: int) -> tuple[int, bool]:
    """(where the string body from ``i`` ends in ``buf``, whether its closing quote is there).

    Without a closing quote the end leaves out a backslash that may start an escape, for
    the next piece. ``find`` for each quote, checking the backslashes before it; a piece with
    many escaped quotes is handed to :func:`_masked_end`.
    """
    q = buf.find(b'"', i)
    for _ in range(64):
        if q < 0:
            break
        k = q - 1
        while k >= i and buf[k] == 0x5C:
            k -= 1
        if (q - 1 - k) % 2 == 0:
            return q, True
        q = buf.find(b'"', q + 1)
    else:
        return _masked_end(buf, i)
    return _masked_end(buf, i) if buf.endswith(b"\\") else (len(buf), False)


def _scan(chunks: Iterable[bytes],
          placeholder: Callable[[int], str]) -> tuple[bytes, list[tuple[int, int]]] | None:
    """The document with each long string replaced by a placeholder, and the long strings' spans."""
    skeleton, body = bytearray(), bytearray()
    spans: list[tuple[int, int]] = []
    base, carry, in_str, start, long = 0, b"", False, 0, False
    source = iter(chunks)
    while True:
        chunk = next(source, b"")
        buf, final, i = carry + chunk, not chunk, 0
        carry = b""
        while i < len(buf):
            if not in_str:
                j = buf.find(b'"', i)
                if j < 0:
                    skeleton += buf[i:]
                    break
                skeleton += buf[i:j]
                in_str, start, long, i = True, base + j + 1, False, j + 1
                body.clear()
                continue
            m, closed = _string_end(buf, i)
            if not long:
                body += buf[i:m]
                if len(body) > LONG_BYTES:
                    long = True
                    body.clear()
            if closed:
                if long:
                    skeleton += json.dumps(placeholder(len(spans))).encode()
                    spans.append((start, base + m))
                else:
                    skeleton += b'"' + body + b'"'
                in_str, i = False, m + 1
                continue
            carry = buf[m:]
            break
        if final:
            return None if in_str else (bytes(skeleton), spans)
        base += len(buf) - len(carry)


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
    file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the payload's LongStrings
    spooled = SpooledPayload(file, 0)

    def spool() -> Iterator[bytes]:
        first = bytes(head)
        head.clear()
        for piece in itertools.chain((first[n:n + _PIECE] for n in range(0, len(first), _PIECE)),
                                     iter(lambda: stream.read(_PIECE), b"")):
            file.write(piece)
            spooled.size += len(piece)
            yield piece
        file.flush()

    spooled.scanned = _scan(spool(), spooled.placeholder)
    return spooled
