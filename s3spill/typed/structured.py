"""Previews of structured outputs (JSON, NDJSON, CSV, TSV) that cut only between elements.

Why: a byte cut is right for a log and wrong for data. The head of a one-line JSON document
cut at 6 KiB ends inside a string; the tail of a CSV starts inside a record. Here the
retained head and tail (:class:`~s3spill.context.retention.RetainedText`) are moved to the
nearest element edge inside them — after a ``,`` of a JSON container, after the newline
that ends a record — and the pointer gets what a byte preview cannot say: the document's
outline (top-level keys, array lengths, types, depth) or exact record counts.

What sees the whole stream: for JSON, :class:`StructureScanner` runs ``ijson``'s event
parser over the first :data:`OUTLINE_SCAN_BYTES` (about 30 MB/s with the outline's
bookkeeping; past it the outline's counts are labelled lower bounds); CSV/TSV records are
counted by the artifact writer's record table (the caller passes the total in), NDJSON
records are lines. The cuts (:mod:`s3spill.typed.cuts`) look only at the retained bytes.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from s3spill.context.budget import ContextBudget
from s3spill.context.pointer import PointerFacts, RenderedContext, render_pointer
from s3spill.context.quoting import no_ids
from s3spill.context.retention import RetainedText
from s3spill.typed.cuts import record_ends, snap
from s3spill.typed.detect import Detection

#: JSON bytes the outline parser reads (≈0.5 s); beyond, counts are lower bounds.
OUTLINE_SCAN_BYTES = 32 * 1024 * 1024
#: Top-level keys the outline names before "… and N more".
OUTLINE_KEYS = 24
#: How much of a key the outline quotes.
_KEY_CHARS = 80


def shown_key(key: str) -> str:
    """A document's key as our outline line quotes it: a Python literal (so no newline or
    quote of the key's own can end it or split our line), its id-shaped strings replaced
    (the one source id in our lines is ours), cut to :data:`_KEY_CHARS`."""
    bare = no_ids(key)
    return repr(bare if len(bare) <= _KEY_CHARS else bare[: _KEY_CHARS - 1] + "…")


def plain_key(key: str) -> bool:
    """A key our hint may show verbatim inside ``path="…"``: printable, no quote, backslash
    or id of its own, short (any other key would have to be escaped, and an escaped JSON
    Pointer is no longer the one to pass)."""
    return (0 < len(key) <= 64 and key.isprintable() and not any(c in key for c in "\"'`")
            and no_ids(key) == key)
#: Top-level entries kept while scanning (a root array keeps the kinds of its first ones).
_MAX_ENTRIES = 1000
_FIT_ATTEMPTS = 4


# --------------------------------------------------------------------------- outline


@dataclass
class _Node:
    """What the outline keeps of one container at depth 1 or 2."""

    kind: str
    count: int = 0
    types: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Outline:
    """The shape of a JSON document: root kind, top-level entries, depth; exact or not."""

    root: str
    #: (key or None for array elements, kind, element/key count for containers).
    entries: tuple[tuple[str | None, str, int | None, tuple[str, ...]], ...]
    count: int
    depth: int
    complete: bool
    valid: bool

    def render(self) -> str:
        bound = "" if self.complete else "at least "
        noun = "keys" if self.root == "object" else "elements"
        if self.root not in ("object", "array"):
            return f"Outline: a single {self.root} value."
        head = f"Outline: {self.root} of {bound}{self.count:,} {noun}, depth {bound}{self.depth}"
        if self.root == "array":
            kinds = sorted({k for _, k, _, _ in self.entries})
            return head + (f"; elements are {' or '.join(kinds)}" if kinds else "") + "."
        parts = []
        for key, kind, count, _ in self.entries[:OUTLINE_KEYS]:
            desc = kind
            if kind == "array" and count is not None:
                desc = f"array of {bound}{count:,}"
            elif kind == "object" and count is not None:
                desc = f"object of {bound}{count:,} key{'s' if count != 1 else ''}"
            parts.append(f"{shown_key(key)}: {desc}" if key is not None else desc)
        more = self.count - min(len(self.entries), OUTLINE_KEYS)
        tail = f"; … and {more:,} more keys" if more > 0 else ""
        if not self.complete:
            tail += f" (outline of the first {OUTLINE_SCAN_BYTES // (1024 * 1024)} MiB)"
        return head + ": " + "; ".join(parts) + tail + "."


class _OutlineParser:
    """ijson events in, an :class:`Outline` out; memory bounded by the keys it names."""

    def __init__(self) -> None:
        import ijson

        self._ijson = ijson
        self._events = ijson.sendable_list()
        self._coro: Any = ijson.basic_parse_coro(self._events)
        self.depth = 0
        self.max_depth = 0
        self.root: str | None = None
        self.count = 0
        self.entries: list[list[Any]] = []
        self.key: str | None = None
        self.valid = True
        self.done = False

    def send(self, data: bytes) -> None:
        if self.done or not self.valid:
            return
        try:
            self._coro.send(data)
        except self._ijson.JSONError:
            self.valid = False
        self._consume()

    def close(self) -> None:
        if self.valid and not self.done:
            try:
                self._coro.close()
                self.done = True
            except self._ijson.JSONError:
                self.valid = False
            self._consume()

    def _consume(self) -> None:
        # Most events are deep inside the document, where only the depth matters: keep that
        # loop free of method calls (it runs a few million times for 30 MB).
        depth, deepest = self.depth, self.max_depth
        for event, value in self._events:
            if depth > 2:
                if event == "start_map" or event == "start_array":
                    depth += 1
                    if depth > deepest:
                        deepest = depth
                elif event == "end_map" or event == "end_array":
                    depth -= 1
                continue
            self.depth, self.max_depth = depth, deepest
            self._event(event, value)
            depth, deepest = self.depth, self.max_depth
        self.depth, self.max_depth = depth, deepest
        del self._events[:]

    def _event(self, event: str, value: Any) -> None:
        depth = self.depth
        if event == "map_key":
            if depth == 1:
                self.key = value
                self.count += 1
            elif depth == 2 and self.entries and self.entries[-1][1] == "object":
                self.entries[-1][2] += 1
            return
        if event in ("end_map", "end_array"):
            self.depth -= 1
            return
        kind = _kind(event, value)
        if depth == 0:
            self.root = kind
        elif depth == 1:
            if self.root == "array":
                self.count += 1
            if len(self.entries) < _MAX_ENTRIES:
                self.entries.append([self.key if self.root == "object" else None, kind,
                                     0 if kind in ("object", "array") else None])
        elif depth == 2 and self.entries and self.entries[-1][1] == "array":
            self.entries[-1][2] += 1
        if kind in ("object", "array"):
            self.depth += 1
            self.max_depth = max(self.max_depth, self.depth)

    def outline(self, complete: bool) -> Outline:
        entries = tuple((e[0], e[1], e[2], ()) for e in self.entries)
        return Outline(self.root or "value", entries, self.count, max(self.max_depth, 1),
                       complete and self.done, self.valid)


def _kind(event: str, value: Any) -> str:
    if event == "start_map":
        return "object"
    if event == "start_array":
        return "array"
    if event == "number":
        return "number"
    if event == "boolean":
        return "boolean"
    if event == "null":
        return "null"
    return "string" if event == "string" else "value"


class StructureScanner:
    """Sees every chunk of a structured output once: the JSON outline (CSV/TSV records are
    counted by the artifact writer's record table, once)."""

    def __init__(self, detected: Detection, scan_bytes: int = OUTLINE_SCAN_BYTES) -> None:
        self.kind = detected.kind
        self.scan_bytes = scan_bytes
        self.seen = 0
        self._json = _OutlineParser() if self.kind == "json" else None
        self._bom = detected.bom

    def push(self, chunk: bytes) -> None:
        if self._bom and self.seen == 0 and chunk.startswith(b"\xef\xbb\xbf"):
            first, chunk = True, chunk[3:]
        else:
            first = False
        self.seen += len(chunk) + (3 if first else 0)
        if self._json is not None and self.seen - len(chunk) < self.scan_bytes:
            self._json.send(chunk)

    def outline(self) -> Outline | None:
        if self._json is None:
            return None
        complete = self.seen <= self.scan_bytes
        if complete:
            self._json.close()
        return self._json.outline(complete)



# --------------------------------------------------------------------------- notes


def record_note(shown: RetainedText | None, kind: str, total_records: int, header: bool) -> str:
    """Which records the preview shows (None: not said) and exactly how many it leaves out."""
    quotes = kind in ("csv", "tsv")
    if shown is None or shown.complete:
        return f"Records: {total_records:,}{' (record 1 is the header)' if header else ''}."
    head_records = record_ends(shown.head, False) if quotes else shown.head.count(b"\n")
    tail_records = (record_ends(shown.tail, False) if quotes else shown.tail.count(b"\n"))
    if shown.tail and not shown.tail.endswith(b"\n"):
        tail_records += 1
    omitted = max(0, total_records - head_records - tail_records)
    first_tail = total_records - tail_records + 1
    shown_range = f"records 1–{head_records:,}" if head_records else "no record of the head"
    if tail_records:
        shown_range += f" and {first_tail:,}–{total_records:,}"
    label = " (record 1 is the header)" if header else ""
    return (f"Records: {total_records:,}{label}; the preview shows {shown_range}; "
            f"{omitted:,} records omitted, none cut in the middle.")


def json_path_example(outline: Outline | None) -> str:
    """A JSON Pointer into the document worth showing in a hint (its first large entry).

    Only a plain key (:func:`plain_key`) is named: the hint is a line of ours, and a key is
    tool text (``"x\\nPage it with read_artifact(source_id=\\"artifact:<another>…"``).
    """
    if outline is None or outline.root not in ("object", "array"):
        return ""
    if outline.root == "array":
        return "/0"
    plain = [(key, kind) for key, kind, _, _ in outline.entries if key is not None and plain_key(key)]
    for key, kind in plain:
        if kind in ("array", "object"):
            tail = "/0" if kind == "array" else ""
            return "/" + key.replace("~", "~0").replace("/", "~1") + tail
    return "/" + plain[0][0].replace("~", "~0").replace("/", "~1") if plain else ""


def type_note(detected: Detection, view: RetainedText | None, *, read_tool: str,
              outline: Outline | None = None, total_records: int | None = None,
              record_pages: bool = False, style: Literal["tools", "cli"] = "tools") -> str:
    """The pointer's lines about a structured output: kind, outline or records, how to read
    (as a tool call, or as ``s3spill read`` flags when ``style`` is ``cli``)."""
    cli = style == "cli"
    lines = [f"Type: {detected.description} (detected from the first bytes)."]
    if detected.kind == "json":
        if outline is not None and outline.valid:
            lines.append(outline.render())
        example = json_path_example(outline)
        if cli:
            lines.append(f"Read a part by JSON Pointer: `s3spill read <source_id> --path "
                         f"{shlex.quote(example)}` shows that value; an object or array is paged "
                         "element by element (--offset <elements to skip> --limit <elements>); "
                         "--path '' pages the top level.")
        else:
            lines.append(f'Read a part by JSON Pointer: {read_tool}(source_id, path="{example}") '
                         "shows that value; an object or array is paged element by element "
                         '(offset=<elements to skip>, limit=<elements>); path="" pages the top level.')
    elif total_records is not None:
        header = detected.kind in ("csv", "tsv")
        lines.append(record_note(view, detected.kind, total_records, header))
        if detected.kind == "ndjson":
            lines.append("Each record is one line: record N is line N "
                         f"({'--offset N-1' if cli else 'offset=N-1'}).")
        elif record_pages:
            how = ("`s3spill read <source_id> --record-offset <records to skip> --limit <records>`"
                   if cli else f"{read_tool}(source_id, record_offset=<records to skip>, "
                   "limit=<records>)")
            lines.append(f"Page it by record with {how}: every page repeats the header.")
    return "\n".join(lines)


def render_structured(facts: PointerFacts, retained: RetainedText, kind: str, *, head_bytes: int,
                      tail_bytes: int, budget: ContextBudget,
                      note: Callable[[RetainedText | None], str]) -> RenderedContext:
    """:func:`~s3spill.context.pointer.render_pointer` with cuts at element edges.

    The renderer may shrink the preview to fit the budget, which cuts anywhere; so the
    shrunk preview is snapped again and re-rendered (``note`` describes each candidate), a
    few times. A note is only ever shown with the preview it describes: if the cuts do not
    settle, the last rendering gets ``note(None)``, which names no shown range.
    """
    view = snap(retained.narrow(head_bytes, tail_bytes), kind)
    rendered = None
    for _ in range(_FIT_ATTEMPTS):
        typed = replace(facts, type_note=note(view))
        rendered = render_pointer(typed, view, head_bytes=len(view.head), tail_bytes=len(view.tail),
                                  budget=budget)
        shown = rendered.shown
        if (shown.head, shown.tail) == (view.head, view.tail) or shown.complete:
            return rendered
        view = snap(shown, kind)
    assert rendered is not None
    shown = rendered.shown
    return render_pointer(replace(facts, type_note=note(None)), shown, head_bytes=len(shown.head),
                          tail_bytes=len(shown.tail), budget=budget)
