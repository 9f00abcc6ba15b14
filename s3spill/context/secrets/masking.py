"""Masking secrets in place: texts, previews, pages and streams, lengths kept.

A secret found by :mod:`s3spill.context.secrets.detector` becomes ``[redacted:aws-key]****``
padded (or shortened, for short secrets) to its own byte length. So sizes, line numbers,
byte and character offsets and omitted counts stay exact whether the text is masked or
not, and a masked preview never exceeds a budget its unmasked text fitted. A private key
block is masked line by line from its BEGIN line to its END line (newlines kept); a text
that starts inside one (a tail, a page) is masked up to its END. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from s3spill.context.secrets.detector import BASE64_ALPHABET, SecretDetector, default_detector

__all__ = ["MAX_LINE_BYTES", "OVERLAP", "LineMasker", "Redacted", "describe_counts", "marker", "redact_bytes",
           "redact_text"]

#: Lines longer than this are scanned in pieces (a piece overlaps the next by
#: :data:`OVERLAP` bytes, so a secret shorter than that is never cut).
MAX_LINE_BYTES = 1024 * 1024
OVERLAP = 8 * 1024
#: Lines longer than this are scanned in windows around each candidate.
_WINDOW = 8 * 1024
#: A key block without END is masked for at most this many lines.
MAX_KEY_BLOCK_LINES = 512
_FILL = "*"

_BEGIN = re.compile(rb"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d")
_END = re.compile(rb"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|Private-MAC: *[0-9a-fA-F]+")

#: A line that is nothing but PEM body (base64, 48-76 characters): in a text that may
#: start inside a key block (a tail, a page, search results quoting single lines), such
#: a line is masked even without its BEGIN line in sight.
_PEM_BODY = re.compile(rb"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{48,76}={0,2}(?=\r?$)", re.MULTILINE)
#: A token that a cut (the end of a head, the start of a tail or page) may have split.
_BOUNDARY_TOKEN = re.compile(rf"[{BASE64_ALPHABET}]{{12,}}")


def marker(kind: str, length: int) -> str:
    """An ASCII mask of exactly ``length`` characters naming ``kind`` when it fits."""
    for label in (f"[redacted:{kind}]", f"[{kind}]", "[redacted]"):
        if len(label) <= length:
            return label + _FILL * (length - len(label))
    return _FILL * length


@dataclass
class LineMasker:
    """Masks complete lines in place, carrying the private-key state from line to line."""

    detector: SecretDetector
    counts: Counter[str] = field(default_factory=Counter)
    in_key: bool = False
    key_lines: int = 0

    def _mask(self, buf: bytearray, start: int, end: int, kind: str) -> None:
        if end > start:
            buf[start:end] = marker(kind, end - start).encode()

    def process(self, data: bytes, *, headless: bool = False) -> bytes:
        """``data`` (complete lines, or a piece of one long line) with its secrets masked.

        ``headless``: the text may start inside a key block (a tail, a page): an END line
        before any BEGIN masks everything before it.
        """
        buf: bytearray | None = None
        pos, size = 0, len(data)
        seen: set[int] = set()
        if headless and not self.in_key:
            end = _END.search(data)
            begin = _BEGIN.search(data, 0, end.start()) if end is not None else None
            if end is not None and begin is None:
                buf = bytearray(data)
                self._mask_lines(buf, 0, end.end(), kind="private-key")
                self.counts["private-key"] += 1
                pos = end.end()
        while pos < size:
            if self.in_key:
                nl = data.find(b"\n", pos)
                line_end = size if nl < 0 else nl
                buf = buf if buf is not None else bytearray(data)
                stop = _END.search(data, pos, line_end)
                cut = stop.end() if stop is not None else line_end
                self._mask(buf, pos, cut - (1 if data[pos:cut].endswith(b"\r") else 0), "private-key")
                self.key_lines += 1
                if stop is not None or self.key_lines >= MAX_KEY_BLOCK_LINES:
                    self.in_key = False
                pos = (line_end + 1) if stop is None else cut
                continue
            at = self.detector.next_candidate(data, pos, size)
            if at < 0:
                break
            line_start = max(pos, data.rfind(b"\n", 0, at) + 1)
            nl = data.find(b"\n", at)
            line_end = size if nl < 0 else nl
            # A long line (minified JSON, a progress bar) is scanned in windows around its
            # candidates: the rules' Python regexes cost more than linear time on a long
            # line, and a secret sits next to what triggered it.
            start, until, after = line_start, line_end, line_end + 1
            if line_end - line_start > _WINDOW:
                start = max(line_start, at - _WINDOW // 4)
                until = min(line_end, at + _WINDOW)
                after = line_end + 1 if until == line_end else max(at + 1, until - _WINDOW // 4)
            line = data[start:until]
            begin = _BEGIN.search(line)
            scan_to = begin.start() if begin is not None else len(line)
            findings = self.detector.scan_line(line[:scan_to]) if scan_to else []
            if findings or begin is not None:
                buf = buf if buf is not None else bytearray(data)
            for f in findings:
                assert buf is not None
                self._mask(buf, start + f.start, start + f.end, f.kind)
                if start + f.start not in seen:  # windows overlap: count each secret once
                    seen.add(start + f.start)
                    self.counts[f.kind] += 1
            if begin is not None:
                self.counts["private-key"] += 1
                self.in_key, self.key_lines = True, 0
                pos = start + begin.start()
                continue  # the key state masks from BEGIN on (to END, maybe on this line)
            pos = after
        return bytes(buf) if buf is not None else data

    def _mask_lines(self, buf: bytearray, start: int, end: int, *, kind: str) -> None:
        """Mask ``buf[start:end]`` line by line, keeping newlines (and CRs)."""
        pos = start
        while pos < end:
            nl = buf.find(b"\n", pos, end)
            stop = end if nl < 0 else nl
            self._mask(buf, pos, stop - (1 if buf[pos:stop].endswith(b"\r") else 0), kind)
            pos = stop + 1


@dataclass(frozen=True)
class Redacted:
    """A masked text (same length in bytes as the original) and what was masked."""

    data: bytes
    counts: Counter[str]

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    @property
    def found(self) -> int:
        return sum(self.counts.values())


def redact_bytes(data: bytes, *, headless: bool = False, cut_start: bool = False, cut_end: bool = False,
                 detector: SecretDetector | None = None) -> Redacted:
    """Mask the secrets of a whole text in memory (a preview, a page, a grep result).

    ``headless``: the text may start inside a key block (see :data:`_PEM_BODY`).
    ``cut_start`` / ``cut_end``: the text was cut out of a longer one there, so a long
    token touching that edge may be part of a secret the detectors no longer recognise;
    it is masked as ``partial``.
    """
    masker = LineMasker(detector or default_detector())
    out = masker.process(data, headless=headless)
    if headless and _PEM_BODY.search(out):
        buf = bytearray(out)
        for m in _PEM_BODY.finditer(out):
            buf[m.start():m.end()] = marker("key-material", m.end() - m.start()).encode()
            masker.counts["key-material"] += 1
        out = bytes(buf)
    if cut_start or cut_end:
        buf = bytearray(out)
        for edge, wanted in ((0, cut_start), (len(buf), cut_end)):
            if not wanted:
                continue
            region = bytes(buf[:256]) if edge == 0 else bytes(buf[-256:])
            offset = 0 if edge == 0 else len(buf) - len(region)
            for m in re.finditer(_BOUNDARY_TOKEN.pattern.encode(), region):
                touches = m.start() == 0 if edge == 0 else m.end() == len(region)
                if touches and not region[m.start():m.end()].startswith(b"[redacted"):
                    buf[offset + m.start():offset + m.end()] = marker("partial", m.end() - m.start()).encode()
                    masker.counts["partial"] += 1
        out = bytes(buf)
    return Redacted(out, masker.counts)


def redact_text(text: str, **kwargs: Any) -> tuple[str, Counter[str]]:
    """:func:`redact_bytes` for a ``str`` (lone surrogates round-trip)."""
    raw = text.encode("utf-8", "surrogateescape")
    done = redact_bytes(raw, **kwargs)
    if not done.counts:
        return text, done.counts
    return done.data.decode("utf-8", "surrogateescape"), done.counts


def describe_counts(counts: Counter[str]) -> str:
    """``2 aws-key, 1 private-key`` (sorted by kind)."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
