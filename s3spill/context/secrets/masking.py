"""Masking secrets in place: texts, previews, pages and streams, lengths kept.

A secret found by :mod:`s3spill.context.secrets.detector` becomes ``[redacted:aws-key]****``
padded (or shortened, for short secrets) to its own byte length. So sizes, line numbers,
byte and character offsets and omitted counts stay exact whether the text is masked or
not, and a masked preview never exceeds a budget its unmasked text fitted. A private key
block is masked line by line from its BEGIN line to its END line (newlines kept); a text
that starts inside one (a tail, a page) is masked up to its END. A view that cuts text
(a preview's head or tail, a page, an excerpt) is masked with the stored text around it
(:func:`mask_window`), so a cut never leaves a piece of a secret unrecognised. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from s3spill.context.secrets.triggers import BASE64_ALPHABET, lines_kept, may_hold_secret

if TYPE_CHECKING:  # the detector loads when a text may hold a secret: most pages never need it
    from s3spill.context.secrets.detector import Finding, SecretDetector

__all__ = ["MAX_LINE_BYTES", "OVERLAP", "LineMasker", "Redacted", "Span", "describe_counts", "marker",
           "mask_view", "mask_window", "redact_bytes", "redact_text"]

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

#: A token that a cut (the end of a head, the start of a tail or page) may have split.
_BOUNDARY_TOKEN = re.compile(rf"[:@%.~{BASE64_ALPHABET}]{{8,}}".encode())


def marker(kind: str, length: int) -> str:
    """An ASCII mask of exactly ``length`` characters naming ``kind`` when it fits."""
    for label in (f"[redacted:{kind}]", f"[{kind}]", "[redacted]"):
        if len(label) <= length:
            return label + _FILL * (length - len(label))
    return _FILL * length


#: Our own locators: a source id or live id printed in a tool's output (a log of an
#: earlier turn, a pointer pasted back) is never a secret, though a session hash ending
#: in digits followed by ``:`` and a name looks like a Telegram bot token.
_OWN_ID = re.compile(rb"(?:artifact|live):[0-9a-f]{32}:[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}-[a-z0-9_-]{1,24}"
                     rb"(?::[0-9a-f]{16})?")
#: How far into a headless text its END line may be and still mask what precedes it.
_HEADLESS_REACH = 64 * 1024

#: One masked secret: ``(start, end, kind)`` in the coordinates of the text masked.
Span = tuple[int, int, str]


@dataclass
class LineMasker:
    """Masks complete lines in place, carrying the private-key state from line to line.

    Positions are bytes throughout (the detector answers byte spans), so a mask never
    shifts on a line with multi-byte characters.
    """

    detector: SecretDetector
    counts: Counter[str] = field(default_factory=Counter)
    in_key: bool = False
    key_lines: int = 0
    #: What the last :meth:`process` masked, one span per secret (a key block is one).
    spans: list[Span] = field(default_factory=list)
    _seen: set[int] = field(default_factory=set)
    _count_from: int = 0

    def _mask(self, buf: bytearray, start: int, end: int, kind: str) -> None:
        if end > start:
            buf[start:end] = marker(kind, end - start).encode()

    def process(self, data: bytes, *, headless: bool = False, count_from: int = 0) -> bytes:
        """``data`` (complete lines, or a piece of one long line) with its secrets masked.

        ``headless``: the text may start inside a key block (a tail, a page): an END line
        before any BEGIN, near the start, masks everything before it. ``count_from``: a
        secret ending before this offset was counted already (a long line's overlap).
        """
        self.spans, self._seen = [], set()
        self._count_from = count_from
        buf: bytearray | None = None
        pos, size = 0, len(data)
        key_start = 0
        if headless and not self.in_key:
            end = _END.search(data, 0, min(size, _HEADLESS_REACH))
            begin = _BEGIN.search(data, 0, end.start()) if end is not None else None
            if end is not None and begin is None and data.count(b"\n", 0, end.start()) < MAX_KEY_BLOCK_LINES:
                buf = bytearray(data)
                self._mask_lines(buf, 0, end.end(), kind="private-key")
                self.counts["private-key"] += 1
                self.spans.append((0, end.end(), "private-key"))
                pos = end.end()
        candidates, i = self.detector.candidates(data, pos, size), 0
        while pos < size:
            if self.in_key:
                buf = buf if buf is not None else bytearray(data)
                pos = self._key_line(data, buf, pos, key_start)
                continue
            while i < len(candidates) and candidates[i][1] < pos:  # lines a key block took
                i += 1
            if i == len(candidates):
                break
            start, stop, hits = candidates[i]
            start = max(start, pos)
            if stop - start > _WINDOW:  # a long line: in windows around each trigger match
                at = self.detector.next_candidate(data, start, stop)
                if at < 0:
                    pos = stop + 1
                    continue
                buf, begin_at, after = self._window(data, buf, pos, at)
            else:
                i += 1
                buf, begin_at = self._scan(data, buf, start, stop, hits)
                after = stop + 1
            if begin_at is not None:
                self.counts["private-key"] += 1
                self.in_key, self.key_lines = True, 0
                pos = key_start = begin_at
                continue  # the key state masks from BEGIN on (to END, maybe on this line)
            pos = after
        if self.in_key:
            self.spans.append((key_start, size, "private-key"))
        return bytes(buf) if buf is not None else data

    def _key_line(self, data: bytes, buf: bytearray, pos: int, key_start: int) -> int:
        """Mask one line of a key block from ``pos``; where to go on."""
        size = len(data)
        nl = data.find(b"\n", pos)
        line_end = size if nl < 0 else nl
        stop = _END.search(data, pos, line_end)
        cut = stop.end() if stop is not None else line_end
        self._mask(buf, pos, cut - (1 if data[pos:cut].endswith(b"\r") else 0), "private-key")
        self.key_lines += 1
        if stop is not None or self.key_lines >= MAX_KEY_BLOCK_LINES:
            self.in_key = False
            self.spans.append((key_start, cut, "private-key"))
        return (line_end + 1) if stop is None else cut

    def _window(self, data: bytes, buf: bytearray | None, pos: int,
                at: int) -> tuple[bytearray | None, int | None, int]:
        """Scan the window of a long line around a trigger match at ``at``; the buffer,
        where a key block begins (None: none), and where to go on.

        Why windows: the rules' Python regexes cost more than linear time on a long line
        (minified JSON, a progress bar), and a secret sits next to what triggered it.
        """
        line_start = max(pos, data.rfind(b"\n", 0, at) + 1)
        nl = data.find(b"\n", at)
        line_end = len(data) if nl < 0 else nl
        start = max(line_start, at - _WINDOW // 4)
        until = min(line_end, at + _WINDOW)
        after = line_end + 1 if until == line_end else max(at + 1, until - _WINDOW // 4)
        buf, begin_at = self._scan(data, buf, start, until, None)
        return buf, begin_at, after

    def _scan(self, data: bytes, buf: bytearray | None, start: int, until: int,
              hits: frozenset[int] | None) -> tuple[bytearray | None, int | None]:
        """Mask the secrets of ``data[start:until]`` (a line, or a window of one) running
        the rules ``hits`` (None: those whose trigger matches it); the buffer, and where a
        key block begins in it (None: none)."""
        line = data[start:until]
        begin = _BEGIN.search(line) if b"PuTTY" in line or b"-----BEGIN" in line else None
        scan_to = begin.start() if begin is not None else len(line)
        findings = []
        if scan_to:
            part = line[:scan_to]
            findings = _not_ours(part, self.detector.scan_line(
                part, hits=hits if hits is not None and scan_to == len(line) else None))
        if findings or begin is not None:
            buf = buf if buf is not None else bytearray(data)
        for f in findings:
            assert buf is not None
            self._mask(buf, start + f.start, start + f.end, f.kind)
            if start + f.start not in self._seen:  # windows overlap: count each secret once
                self._seen.add(start + f.start)
                self.spans.append((start + f.start, start + f.end, f.kind))
                if start + f.end > self._count_from:
                    self.counts[f.kind] += 1
        return buf, (start + begin.start() if begin is not None else None)

    def _mask_lines(self, buf: bytearray, start: int, end: int, *, kind: str) -> None:
        """Mask ``buf[start:end]`` line by line, keeping newlines (and CRs)."""
        pos = start
        while pos < end:
            nl = buf.find(b"\n", pos, end)
            stop = end if nl < 0 else nl
            self._mask(buf, pos, stop - (1 if buf[pos:stop].endswith(b"\r") else 0), kind)
            pos = stop + 1


def _not_ours(line: bytes, findings: list[Finding]) -> list[Finding]:
    """The findings that are not inside one of our own locators (see :data:`_OWN_ID`)."""
    if not findings or (b"artifact:" not in line and b"live:" not in line):
        return findings
    ours = [m.span() for m in _OWN_ID.finditer(line)]
    return [f for f in findings if not any(s <= f.start and f.end <= e for s, e in ours)]


@dataclass(frozen=True)
class Redacted:
    """A masked text (same length in bytes as the original) and what was masked."""

    data: bytes
    counts: Counter[str]
    #: Where each masked secret is in :attr:`data` (clipped to it).
    spans: tuple[Span, ...] = ()

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    @property
    def found(self) -> int:
        return sum(self.counts.values())


def mask_window(data: bytes, *, before: bytes = b"", after: bytes = b"", headless: bool | None = None,
                detector: SecretDetector | None = None) -> Redacted:
    """``data`` masked as it reads inside ``before + data + after`` (the stored text around
    a cut: a page, an excerpt, a preview's head or tail).

    Why the surroundings: a view that cuts text can cut a secret, and a piece of a secret
    is no longer recognisable on its own; seen with enough text on both sides the secret
    is whole, so every piece of it inside ``data`` is masked, wherever the cut falls. The
    counts and spans are those of the secrets that reach into ``data``. ``headless``
    (default: ``before`` was given) means the window may start inside a key block.
    """
    whole = before + data + after if before or after else data
    if detector is None and not may_hold_secret(whole):
        # No rule's trigger anywhere in the window: no finding, and no BEGIN or END line
        # of a key block (both are the private-key trigger), so masking changes nothing;
        # the detector (detect-secrets' import and its RE2 sets, ~0.2 s) is never built.
        return Redacted(data, Counter())
    if detector is None:
        from s3spill.context.secrets.detector import default_detector

        detector = default_detector()
    masker = LineMasker(detector)
    out = masker.process(whole, headless=bool(before) if headless is None else headless)
    lo, hi = len(before), len(before) + len(data)
    spans = tuple((max(s, lo) - lo, min(e, hi) - lo, kind)
                  for s, e, kind in masker.spans if s < hi and e > lo)
    return Redacted(out[lo:hi] if whole is not data else out, Counter(kind for _, _, kind in spans), spans)


def redact_bytes(data: bytes, *, headless: bool = False, cut_start: bool = False, cut_end: bool = False,
                 detector: SecretDetector | None = None) -> Redacted:
    """Mask the secrets of a whole text in memory, when no surrounding text is at hand.

    ``headless``: the text may start inside a key block. ``cut_start`` / ``cut_end``: the
    text was cut out of a longer one there and the rest is not available (prefer
    :func:`mask_window`), so a token touching that edge may be part of a secret the
    detectors no longer recognise; it is masked as ``partial``.
    """
    done = mask_window(data, headless=headless, detector=detector)
    if not (cut_start or cut_end):
        return done
    buf, counts, spans = bytearray(done.data), Counter(done.counts), list(done.spans)
    for edge, wanted in ((0, cut_start), (len(buf), cut_end)):
        if not wanted:
            continue
        region = bytes(buf[:256]) if edge == 0 else bytes(buf[-256:])
        offset = 0 if edge == 0 else len(buf) - len(region)
        for m in _BOUNDARY_TOKEN.finditer(region):
            touches = m.start() == 0 if edge == 0 else m.end() == len(region)
            if touches and b"[redacted" not in region[m.start():m.end()]:
                buf[offset + m.start():offset + m.end()] = marker("partial", m.end() - m.start()).encode()
                counts["partial"] += 1
                spans.append((offset + m.start(), offset + m.end(), "partial"))
    return Redacted(bytes(buf), counts, tuple(spans))


def mask_view(data: bytes, before: bytes = b"", after: bytes = b"", *, headless: bool = False,
              cut_end: bool = False) -> bytes:
    """A reader's view of stored bytes (``s3spill.artifacts.views.ChunkView``): ``data``
    masked in its context; ``cut_end``: the text goes on but is not readable yet (a live
    output's newest line), so a token at the end is masked as ``partial``."""
    if not data:
        return data
    done = mask_window(data, before=before, after=after, headless=headless or bool(before))
    if not cut_end or data.endswith(b"\n"):
        return done.data
    return redact_bytes(done.data, cut_end=True).data


#: A reader asks the view which lines it keeps as stored before masking whole chunks
#: (:func:`s3spill.artifacts.views.page_as_stored`: a page reads only its own lines).
mask_view.keeps_lines = lines_kept  # type: ignore[attr-defined]


def redact_text(text: str, **kwargs: Any) -> tuple[str, Counter[str]]:
    """:func:`redact_bytes` for a ``str`` (lone surrogates round-trip).

    A surrogate escape (``\\udc80``-``\\udcff``) is the byte it stands for; any other lone
    surrogate (``\\ud800``, from a JSON ``\\ud800`` escape) has no UTF-8 form and is masked as
    its WTF-8 bytes, then turned back into itself.
    """
    try:
        raw, errors = text.encode("utf-8", "surrogateescape"), "surrogateescape"
    except UnicodeEncodeError:
        raw, errors = text.encode("utf-8", "surrogatepass"), "surrogatepass"
    done = redact_bytes(raw, **kwargs)
    if not done.counts:
        return text, done.counts
    return done.data.decode("utf-8", errors), done.counts


def describe_counts(counts: Counter[str]) -> str:
    """``2 aws-key, 1 private-key`` (sorted by kind)."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
