"""Building an artifact's index in one pass over its content (see :mod:`.index`).

Split from :mod:`.index` because only a write needs it: :class:`IndexBuilder` is fed the
content once, chunk by chunk, with memory bounded by one index chunk; it also computes
the full SHA-256, size, line count and the first non-empty line for the deterministic
summary. A read process loads :mod:`.index` alone.
"""

from __future__ import annotations

import codecs
import hashlib
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from s3spill.artifacts.index import MAX_DESCRIPTION_CHARS, ArtifactIndex, Codec, OutputKind, unit_len
from s3spill.typed.record_ends import RecordTable

__all__ = ["ContentStats", "IndexBuilder", "build_stats", "make_summary"]

#: Longest first line kept for the summary, and longest tool/call id/label stored.
SUMMARY_LINE_CHARS = 200
MAX_FIELD_CHARS = 256
_SUMMARY_CAPTURE_BYTES = 4 * SUMMARY_LINE_CHARS
_NON_SPACE = re.compile(rb"[^ \t\r\n\f\v]")


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentStats:
    """What one pass over the content yields, before the artifact has a name (built by
    :class:`IndexBuilder` only; the index it becomes is checked)."""

    size_bytes: int
    line_count: int
    ends_with_newline: bool
    sha256: str
    first_line: str
    chunk_size: int
    chunk_sha256: tuple[str, ...]
    chunk_newlines: tuple[int, ...]
    chunk_units: tuple[int, ...]
    chunk_carry: tuple[int, ...]
    chunk_lastline_units: tuple[int, ...]
    codec: Codec = "identity"
    chunk_stored: tuple[int, ...] = ()
    chunk_records: tuple[int, ...] = ()
    chunk_quoted: tuple[bool, ...] = ()

    def to_index(
        self, *, session_hash: str, name: str, created_at: datetime, tool: str,
        call_id: str | None, label: str | None, body_etag: str,
        output_kind: OutputKind = "text", output_description: str | None = None,
    ) -> ArtifactIndex:
        description = None if output_description is None else _clean_line(
            output_description.encode("utf-8", "replace"))[:MAX_DESCRIPTION_CHARS]
        first = self.first_line
        if output_kind == "binary":  # its "first line" is bytes, not words
            first = description or "binary data"
        return ArtifactIndex(
            session_hash=session_hash, name=name, created_at=created_at,
            tool=_bounded(tool) or "tool", call_id=_bounded(call_id), label=_bounded(label),
            summary=make_summary(first, self.size_bytes, self.line_count),
            body_etag=body_etag, output_kind=output_kind, output_description=description,
            size_bytes=self.size_bytes, line_count=self.line_count,
            ends_with_newline=self.ends_with_newline, sha256=self.sha256, chunk_size=self.chunk_size,
            chunk_sha256=self.chunk_sha256, chunk_newlines=self.chunk_newlines,
            chunk_units=self.chunk_units, chunk_carry=self.chunk_carry,
            chunk_lastline_units=self.chunk_lastline_units, codec=self.codec,
            chunk_stored=self.chunk_stored, chunk_records=self.chunk_records,
            chunk_quoted=self.chunk_quoted,
        )


def _bounded(value: str | None) -> str | None:
    return None if value is None else value[:MAX_FIELD_CHARS]


def make_summary(first_line: str, size_bytes: int, line_count: int) -> str:
    """Deterministic and bounded: the first non-empty line plus the size. No model call."""
    size = f"{size_bytes:,} bytes, {line_count:,} line{'s' if line_count != 1 else ''}"
    return f"{first_line} ({size})" if first_line else f"(no text) ({size})"


def _clean_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)
    text = " ".join(text.split())
    if len(text) > SUMMARY_LINE_CHARS:
        text = text[: SUMMARY_LINE_CHARS - 1] + "…"
    return text


class IndexBuilder:
    """Incremental, single pass, memory bounded by one chunk: feed bytes, then ``finish()``.

    With ``on_chunk``, each complete chunk is handed to it (with its number) instead of
    being hashed here: the caller hashes it (and compresses it) on a worker thread and
    reports back through :meth:`set_chunk` before :meth:`finish`.
    """

    def __init__(self, chunk_size: int,
                 on_chunk: Callable[[int, bytes], None] | None = None,
                 records: RecordTable | None = None) -> None:
        if chunk_size < 16:
            raise ValueError("index chunk size must be at least 16 bytes")
        self.chunk_size = chunk_size
        self._buf = bytearray()
        self._sha = hashlib.sha256()
        self._size = 0
        self._last = b""
        self._dec = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._on_chunk = on_chunk
        self._records = records
        self._sha_list: list[str] = []
        self._stored: list[int] = []
        self._newlines: list[int] = []
        self._units: list[int] = []
        self._carry: list[int] = []
        self._lastline: list[int] = []
        self._first: bytearray | None = None  # capture of the first non-empty line
        self._first_done = False
        self._finished = False

    def feed(self, data: bytes) -> None:
        if self._finished:
            raise ValueError("builder already finished")
        if not data:
            return
        self._sha.update(data)
        self._size += len(data)
        self._last = data[-1:]
        self._scan_first_line(data)
        c = self.chunk_size
        if not self._buf and len(data) == c:  # the usual case: whole chunks, no copying
            self._chunk(bytes(data))
            return
        self._buf += data
        if len(self._buf) >= c:
            view = memoryview(self._buf)
            cut = len(self._buf) - len(self._buf) % c
            for start in range(0, cut, c):
                self._chunk(bytes(view[start : start + c]))
            view.release()
            del self._buf[:cut]

    def flush(self) -> None:
        """Cut the last, partial chunk (no more bytes will come)."""
        if self._buf:
            self._chunk(bytes(self._buf))
            self._buf.clear()

    def set_chunk(self, k: int, sha256: str, stored: int) -> None:
        """Record chunk ``k``'s raw digest and stored frame length (``on_chunk`` mode)."""
        self._sha_list[k] = sha256
        while len(self._stored) <= k:
            self._stored.append(0)
        self._stored[k] = stored

    def finish(self, codec: Codec = "identity") -> ContentStats:
        if self._finished:
            raise ValueError("builder already finished")
        self.flush()
        if any(not s for s in self._sha_list):
            raise ValueError("a chunk was never reported back")
        pending = self._dec.getstate()[0]
        self._walk(self._dec.decode(b"", final=True), self._size - len(pending))
        self._finished = True
        newlines = sum(self._newlines)
        ends_nl = self._last == b"\n"
        first = _clean_line(bytes(self._first)) if self._first is not None else ""
        return ContentStats(
            size_bytes=self._size,
            line_count=newlines + (0 if self._size == 0 or ends_nl else 1),
            ends_with_newline=ends_nl, sha256=self._sha.hexdigest(), first_line=first,
            chunk_size=self.chunk_size, chunk_sha256=tuple(self._sha_list),
            chunk_newlines=tuple(self._newlines), chunk_units=tuple(self._units),
            chunk_carry=tuple(self._carry), chunk_lastline_units=tuple(self._lastline),
            chunk_records=tuple(self._records.ends) if self._records is not None else (),
            chunk_quoted=tuple(self._records.quoted) if self._records is not None else (),
            codec=codec, chunk_stored=tuple(self._stored) if self._on_chunk else tuple(
                min(self.chunk_size, self._size - k * self.chunk_size)
                for k in range(len(self._sha_list))),
        )

    def _chunk(self, data: bytes) -> None:
        k = len(self._sha_list)
        start = k * self.chunk_size
        if self._on_chunk is not None:
            self._sha_list.append("")
            self._on_chunk(k, data)
        else:
            self._sha_list.append(hashlib.sha256(data).hexdigest())
        self._newlines.append(data.count(b"\n"))
        if self._records is not None:
            self._records.push(data)
        self._units.append(0)
        self._carry.append(0)
        pending = len(self._dec.getstate()[0])
        if not pending and data.isascii():  # fast path: one unit per byte, nothing carried
            self._units[k] = len(data)
            nl = data.rfind(b"\n")
            self._lastline.append(nl + 1 if nl >= 0 else -1)
            return
        out = self._dec.decode(data)
        walked = self._walk(out, start - pending, stop=start)
        own = out[walked:]  # units that start inside this chunk and are complete
        self._units[k] += len(own)
        if data.rfind(b"\n") >= 0:
            self._lastline.append(own.rfind("\n") + 1)
        else:
            self._lastline.append(-1)

    def _walk(self, out: str, pos: int, stop: int | None = None) -> int:
        """Assign the leading units of ``out`` (starting at byte ``pos``) to their chunks.

        Only units that start before ``stop`` are walked (they were pending across a chunk
        edge); returns how many were walked. At most three: a pending prefix is < 4 bytes.
        """
        c = self.chunk_size
        i = 0
        while i < len(out) and (stop is None or pos < stop):
            blen = unit_len(out[i])
            self._units[pos // c] += 1
            last = (pos + blen - 1) // c
            if last != pos // c:
                self._carry[last] = pos + blen - last * c
            pos += blen
            i += 1
        return i

    def _scan_first_line(self, data: bytes) -> None:
        if self._first_done:
            return
        if self._first is None:
            m = _NON_SPACE.search(data)
            if m is None:
                return
            self._first = bytearray()
            data = data[m.start() :]
        end = data.find(b"\n")
        room = _SUMMARY_CAPTURE_BYTES - len(self._first)
        piece = data[: end if end >= 0 else len(data)][:room]
        self._first += piece
        if end >= 0 or len(self._first) >= _SUMMARY_CAPTURE_BYTES:
            self._first_done = True


def build_stats(data: bytes, chunk_size: int) -> ContentStats:
    """Convenience for whole-bytes callers and tests."""
    builder = IndexBuilder(chunk_size)
    builder.feed(data)
    return builder.finish()
