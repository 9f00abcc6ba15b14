"""What kind of output this is, from its first bytes: text, binary, JSON, NDJSON, CSV or TSV.

Why from the first bytes only: the Spiller decides on a stream it reads once, and a type
must be known before the preview is rendered; 64 KiB is what ``file(1)`` and the codec
choice look at too, so the cost does not grow with the output (benchmarks/detect_bench.py).

The order is the one that is cheapest to get right: a byte-order mark; then bytes a text
never holds (a NUL, C0 control bytes other than the ones terminals use, or many bytes that
are not UTF-8) make it *binary*, named by its magic number through ``puremagic`` (its
maintained database, not a table of ours), "binary data" when nothing matches; only text
is sniffed further — a JSON value whose first bytes parse (``ijson``: a truncated prefix is
fine, a syntax error is not), one JSON value per line (NDJSON), or rows with the same
number of fields (CSV, TSV; parsed by :mod:`csv`, so quoted newlines are handled).

Detection never raises: anything unexpected (a broken magic database, an odd encoding)
answers "text", which is what the output was taken to be before.
"""

from __future__ import annotations

import csv
import io
import json
import struct
from dataclasses import dataclass
from typing import Literal

OutputKind = Literal["text", "binary", "json", "ndjson", "csv", "tsv"]
OUTPUT_KINDS: tuple[OutputKind, ...] = ("text", "binary", "json", "ndjson", "csv", "tsv")

#: Bytes looked at (the same as the store's codec choice).
SNIFF_BYTES = 64 * 1024
#: Terminal control bytes that text does hold: backspace, tab, LF, VT, FF, CR, ESC.
_TEXT_CONTROLS = b"\x08\t\n\x0b\x0c\r\x1b"
_CONTROLS = bytes(b for b in [*range(0x20), 0x7F] if b not in _TEXT_CONTROLS)
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROLS)
#: A text with more control bytes (per byte) than this is binary; likewise for non-UTF-8.
MAX_CONTROL_RATIO = 0.01
MAX_INVALID_RATIO = 0.30
#: Rows a CSV/TSV sample must hold (header included) before it is called a table.
MIN_TABLE_ROWS = 3
_SNIFF_ROWS = 50
_MIN_MAGIC_CONFIDENCE = 0.2

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\x00\x00\xfe\xff", "UTF-32 BE text"),
    (b"\xff\xfe\x00\x00", "UTF-32 LE text"),
    (b"\xfe\xff", "UTF-16 BE text"),
    (b"\xff\xfe", "UTF-16 LE text"),
)
_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Detection:
    """The detected type, a short human description, and a MIME type when one is known."""

    kind: OutputKind
    description: str
    mime: str | None = None
    #: The output starts with a UTF-8 byte-order mark (kept in the stored bytes).
    bom: bool = False

    @property
    def structured(self) -> bool:
        return self.kind in ("json", "ndjson", "csv", "tsv")


TEXT = Detection("text", "text")


def detect(head: bytes | bytearray | memoryview, *, complete: bool = False) -> Detection:
    """The type of an output whose first bytes are ``head``.

    ``complete`` says ``head`` is the whole output (a JSON document must then parse to its
    end). Never raises.
    """
    try:
        return _detect(bytes(head[:SNIFF_BYTES]), complete and len(head) <= SNIFF_BYTES)
    except Exception:  # noqa: BLE001 - detection is a hint: fail open to "text"
        return TEXT


def _detect(sample: bytes, complete: bool) -> Detection:
    if not sample:
        return TEXT
    for mark, name in _BOMS:
        if sample.startswith(mark):
            return Detection("binary", f"{name} (byte-order mark; shown as bytes)",
                             "text/plain")
    bom = sample.startswith(_UTF8_BOM)
    body = sample[len(_UTF8_BOM):] if bom else sample
    if looks_binary(body):
        return describe_binary(body)
    found = _sniff_text(body, complete)
    if bom:
        return Detection(found.kind, found.description + " (UTF-8 with byte-order mark)",
                         found.mime, bom=True)
    return found


def looks_binary(sample: bytes) -> bool:
    """A NUL, C0 control bytes a terminal does not use, or too many bytes that are not UTF-8."""
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    controls = len(sample.translate(None, _NOT_CONTROL))
    if controls > MAX_CONTROL_RATIO * len(sample):
        return True
    if sample.isascii():
        return False
    valid = len(sample.decode("utf-8", "ignore").encode("utf-8"))
    return len(sample) - valid > MAX_INVALID_RATIO * len(sample)


def describe_binary(sample: bytes) -> Detection:
    """``binary`` with the name of its format (puremagic), image dimensions when cheap."""
    name, mime = _magic(sample)
    size = _image_size(sample)
    if size is not None:
        name += f", {size[0]}x{size[1]}"
    return Detection("binary", name, mime)


def _magic(sample: bytes) -> tuple[str, str | None]:
    import puremagic  # lazy: text outputs never load the magic database

    try:
        matches = puremagic.magic_string(sample)
    except puremagic.PureError:
        return "binary data", None
    usable = [m for m in matches
              if m.confidence >= _MIN_MAGIC_CONFIDENCE and len(m.byte_match) >= 2 and m.name]
    if not usable:
        return "binary data", None
    best = max(usable, key=lambda m: (m.confidence, len(m.byte_match)))
    return str(best.name).strip(), str(best.mime_type) or None


def _image_size(sample: bytes) -> tuple[int, int] | None:
    """Width and height of a PNG or GIF, read from its header (a fixed offset)."""
    if sample.startswith(b"\x89PNG\r\n\x1a\n") and sample[12:16] == b"IHDR" and len(sample) >= 24:
        width, height = struct.unpack(">II", sample[16:24])
        return int(width), int(height)
    if sample[:6] in (b"GIF87a", b"GIF89a") and len(sample) >= 10:
        width, height = struct.unpack("<HH", sample[6:10])
        return int(width), int(height)
    return None


# --------------------------------------------------------------------------- text kinds


def _sniff_text(body: bytes, complete: bool) -> Detection:
    start = body.lstrip()[:1]
    if start in (b"{", b"["):
        if _ndjson(body, complete):
            return Detection("ndjson", "NDJSON (one JSON value per line)", "application/x-ndjson")
        if json_prefix_parses(body, complete):
            kind = "object" if start == b"{" else "array"
            return Detection("json", f"JSON document (top-level {kind})", "application/json")
        return TEXT
    tables: tuple[tuple[str, OutputKind, str], ...] = (
        ("\t", "tsv", "text/tab-separated-values"), (",", "csv", "text/csv"))
    for delimiter, kind, mime in tables:
        columns = _table_columns(body, complete, delimiter)
        if columns:
            return Detection(kind, f"{kind.upper()} table ({columns} columns)", mime)
    return TEXT


def json_prefix_parses(data: bytes, complete: bool) -> bool:
    """``data`` is a JSON value (``complete``) or the start of one (a cut is not an error)."""
    import ijson

    events = ijson.sendable_list()
    coro = ijson.basic_parse_coro(events)
    try:
        coro.send(data)
    except ijson.JSONError:
        return False
    if not complete:
        return True
    try:
        coro.close()
    except ijson.JSONError:
        return False
    return True


def _ndjson(body: bytes, complete: bool) -> bool:
    """At least two lines, each one JSON object or array (the last may be cut)."""
    lines = body.split(b"\n")
    if not complete:
        lines = lines[:-1]  # the last line may be cut by the sample
    values = 0
    for line in lines[:_SNIFF_ROWS]:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped[:1] not in (b"{", b"["):
            return False
        try:
            json.loads(stripped)
        except ValueError:
            return False
        values += 1
    return values >= 2


def _table_columns(body: bytes, complete: bool, delimiter: str) -> int:
    """Columns of a table whose sampled rows all have that many (>= 2) fields; 0 if not one."""
    if delimiter.encode() not in body[:4096]:
        return 0
    if not complete:
        cut = body.rfind(b"\n")
        if cut < 0:
            return 0
        body = body[: cut + 1]
    text = body.decode("utf-8", "replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    widths: set[int] = set()
    rows = 0
    try:
        for row in reader:
            if not row:
                continue
            widths.add(len(row))
            rows += 1
            if len(widths) > 1 or rows >= _SNIFF_ROWS:
                break
    except csv.Error:
        if complete:  # a cut sample may end inside a quoted field; a whole output may not
            return 0
    if len(widths) != 1 or rows < MIN_TABLE_ROWS:
        return 0
    (width,) = widths
    return width if width >= 2 else 0
