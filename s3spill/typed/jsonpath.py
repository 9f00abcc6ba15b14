"""A stored JSON document read by JSON Pointer (RFC 6901), streamed, memory bounded.

Why streamed: the document may be a gigabyte on one line. The verified chunks are fed to
``ijson``'s event parser one at a time; every subtree off the way to the pointer is skipped
by counting its brackets (nothing of it is built), and the reading stops as soon as the
page is complete, so the bytes fetched run up to the end of the page — not to the end of
the document — and memory holds one chunk, its events and the page.

What a page shows: a scalar whole (cut to the budget if it is a long string); an object or
array *element by element* — one row per element, in compact JSON, a row cut when it would
not fit (the row then says which path reads it whole) — from ``offset`` elements in, so a
minified document pages by element, never by character. The footer says how to continue.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict

from s3spill.context.read_args import ArgStyle
from s3spill.context.read_limits import DEFAULT_ELEMENTS as DEFAULT_ELEMENTS
from s3spill.errors import InvalidRequest

#: A row longer than this is cut (so one page shows many small elements or one large one).
ROW_CHARS = 4000
_STARTS = ("start_map", "start_array")
_ENDS = ("end_map", "end_array")


def parse_pointer(path: str) -> tuple[str, ...]:
    """RFC 6901: ``""`` is the whole document, ``/a/0/b~1c`` is ``a``, ``0``, ``b/c``."""
    if path == "":
        return ()
    if not path.startswith("/"):
        raise InvalidRequest(f"a JSON Pointer starts with '/' (or is empty): {path[:80]!r}")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/"))


def pointer(tokens: tuple[str, ...] | list[str]) -> str:
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


class JsonPage(BaseModel):
    """The value at a path, or a window of its elements, and how to go on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source_id: str
    path: str
    kind: str
    offset: int
    rows: tuple[str, ...]
    eof: bool
    next_offset: int | None
    #: Elements of the container, when the page reached its end (else None).
    total_elements: int | None
    bytes_scanned: int
    size_bytes: int

    def header(self) -> str:
        where = f'JSON at path="{self.path}" ({self.kind})'
        if self.kind in ("object", "array"):
            span = (f"elements {self.offset}-{self.offset + len(self.rows) - 1}" if self.rows
                    else "no elements")
            where += f" | {span}"
        return f"[{self.source_id} | {where} | {self.size_bytes:,} bytes]"

    def footer(self, style: ArgStyle = "call") -> str:
        if self.kind not in ("object", "array"):
            return "[EOF: the whole value is shown]" if self.eof else (
                "[the value is cut to the page size]")
        if self.eof:
            return f'[EOF: path="{self.path}" has {self.total_elements:,} elements]'
        where = (f"--path {shlex.quote(self.path)} --offset {self.next_offset}" if style == "cli"
                 else f'path="{self.path}", offset={self.next_offset}')
        return f"[more elements follow; continue with {where}]"

    def render(self, style: ArgStyle = "call") -> str:
        """The value or its elements; ``style`` spells the footer for the reader's surface."""
        return "\n".join([self.header(), *self.rows, self.footer(style)]) + "\n"


def _scalar(event: str, value: Any) -> str:
    if event == "string" or event == "map_key":
        return json.dumps(value, ensure_ascii=False)
    if event == "boolean":
        return "true" if value else "false"
    if event == "null":
        return "null"
    return str(value) if isinstance(value, (int, Decimal)) else json.dumps(value)


class _Writer:
    """Compact JSON from events, up to ``cap`` characters (then it only tracks nesting)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.cut = False
        self._first = [True]
        self._object = [False]
        self.depth = 0

    def _put(self, text: str) -> None:
        if self.cut:
            return
        if self.size + len(text) > self.cap:
            self.parts.append(text[: max(0, self.cap - self.size)])
            self.size = self.cap
            self.cut = True
            return
        self.parts.append(text)
        self.size += len(text)

    def event(self, event: str, value: Any) -> bool:
        """Write one event; True when the value that was started is complete."""
        if event in _ENDS:
            self._first.pop()
            self._object.pop()
            self._put("}" if event == "end_map" else "]")
            self.depth -= 1
            return self.depth == 0
        if event == "map_key":
            self._put(("" if self._first[-1] else ",") + _scalar(event, value) + ":")
            self._first[-1] = False
            return False
        if not self._object[-1]:
            self._put("" if self._first[-1] else ",")
            self._first[-1] = False
        if event in _STARTS:
            self._put("{" if event == "start_map" else "[")
            self._first.append(True)
            self._object.append(event == "start_map")
            self.depth += 1
            return False
        self._put(_scalar(event, value))
        return self.depth == 0

    def text(self) -> str:
        return "".join(self.parts) + ("…" if self.cut else "")


class _Navigator:
    """Events in; finds the value at ``target`` and collects the page's rows."""

    def __init__(self, target: tuple[str, ...], path: str, offset: int, limit: int,
                 max_chars: int) -> None:
        self.target, self.path = target, path
        self.offset, self.limit, self.budget = offset, limit, max_chars
        self.level = 0  # on-path containers open
        self.skip = 0  # nesting inside a skipped subtree
        self.kinds: list[bool] = []  # on-path containers: True for objects
        self.keys: list[str | None] = []
        self.index: list[int] = []
        self.found: str | None = None  # kind of the value at the target
        self.rows: list[str] = []
        self.children = 0  # elements of the target container seen
        self.element: _Writer | None = None
        self.element_label = ""
        self.done = False
        self.eof = False
        self.container_is_object = False
        self.key: str | None = None

    # -- before the target ---------------------------------------------------------------

    def event(self, event: str, value: Any) -> None:
        if self.skip:
            if event in _STARTS:
                self.skip += 1
            elif event in _ENDS:
                self.skip -= 1
            return
        if self.found is not None:
            self._inside(event, value)
            return
        if event == "map_key":
            self.keys[-1] = value
            return
        if event in _ENDS:  # an on-path container ended before the token it had to hold
            parent = pointer(list(self.target[: self.level - 1]))
            raise InvalidRequest(f'no value at path="{self.path}": "{parent}" has no '
                                 f"{self.target[self.level - 1]!r}")
        token = self._token()
        if token is not None and token != self.target[self.level - 1]:
            if event in _STARTS:
                self.skip = 1  # off the path: count its brackets, build nothing
            return
        if self.level == len(self.target):
            self._found(event, value)
            return
        if event not in _STARTS:
            raise InvalidRequest(f'no value at path="{self.path}": '
                                 f'"{pointer(list(self.target[: self.level]))}" is a '
                                 f"{_kind(event)}, not an object or array")
        self._open(event)

    def _token(self) -> str | None:
        """The token of the value starting now in the innermost on-path container."""
        if not self.kinds:
            return None
        if self.kinds[-1]:
            return self.keys[-1]
        self.index[-1] += 1
        return str(self.index[-1])

    def _open(self, event: str) -> None:
        self.level += 1
        self.kinds.append(event == "start_map")
        self.keys.append(None)
        self.index.append(-1)

    # -- the target ----------------------------------------------------------------------

    def _found(self, event: str, value: Any) -> None:
        self.found = _kind(event)
        if event not in _STARTS:
            writer = _Writer(max(64, self.budget))
            writer.event(event, value)
            self.rows.append(writer.text())
            self.eof = not writer.cut
            self.done = True
            return
        self.container_is_object = event == "start_map"

    def _inside(self, event: str, value: Any) -> None:
        if self.element is not None:
            if self.element.event(event, value):
                self._finish_element()
            return
        if event == "map_key":
            self.key = value
            return
        if event in _ENDS:  # the target container ends
            self.eof = True
            self.done = True
            return
        number = self.children
        self.children += 1
        if number < self.offset:
            if event in _STARTS:
                self.skip = 1
            return
        if len(self.rows) >= self.limit or self.budget < 200:
            self.done = True  # another element follows: the page is full
            return
        label = (json.dumps(self.key, ensure_ascii=False) + ": " if self.container_is_object
                 else f"[{number}] ")
        self.element_label = label
        self.element = _Writer(min(ROW_CHARS, self.budget - len(label) - 80))
        if self.element.event(event, value):
            self._finish_element()

    def _finish_element(self) -> None:
        assert self.element is not None
        if self.element.cut and self.rows and self.element.cap < ROW_CHARS:
            # It does not fit what is left of this page, but would fit a page of its own:
            # the page ends before it (the next one starts with it, whole).
            self.children -= 1
            self.element = None
            self.done = True
            return
        row = self.element_label + self.element.text()
        if self.element.cut:
            child = self.key if self.container_is_object else str(self.children - 1)
            row += f' (cut; read it whole with path="{pointer([*self.target, child or ""])}")'
        self.rows.append(row)
        self.budget -= len(row) + 1
        self.element = None


def _kind(event: str) -> str:
    return {"start_map": "object", "start_array": "array", "string": "string", "number": "number",
            "integer": "number", "double": "number", "boolean": "boolean",
            "null": "null"}.get(event, "value")


def _feed(nav: _Navigator, events: list[tuple[str, Any]]) -> None:
    """Hand events to ``nav`` until its page is done; a skipped subtree is counted inline
    (the hot loop: most of a large document is skipped, millions of events)."""
    skip = nav.skip
    for event, value in events:
        if skip:
            if event == "start_map" or event == "start_array":
                skip += 1
            elif event == "end_map" or event == "end_array":
                skip -= 1
            continue
        nav.skip = 0
        nav.event(event, value)
        skip = nav.skip
        if nav.done:
            break
    nav.skip = skip


def build_json_page(chunks: Iterator[bytes], source_id: str, size_bytes: int, *, path: str = "",
                    offset: int = 0, limit: int = DEFAULT_ELEMENTS,
                    max_chars: int = 40_000) -> JsonPage:
    """Stream ``chunks`` (verified, in order) until the page at ``path`` is complete."""
    import ijson

    if offset < 0 or limit < 1:
        raise InvalidRequest("offset must be >= 0 and limit >= 1")
    target = parse_pointer(path)
    reserve = len(source_id) + len(path) * 2 + 200
    if max_chars - reserve < 200:
        raise InvalidRequest(f"max_chars={max_chars} is too small for a JSON page")
    nav = _Navigator(target, path, offset, limit, max_chars - reserve)
    events = ijson.sendable_list()
    coro = ijson.basic_parse_coro(events)
    scanned = 0
    try:
        for chunk in chunks:
            if scanned == 0 and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
                scanned = 3
            scanned += len(chunk)
            try:
                coro.send(chunk)
            except ijson.JSONError as exc:
                raise InvalidRequest(f"{source_id} is not valid JSON before byte {scanned:,}: "
                                     f"{str(exc).splitlines()[0][:120]}") from None
            _feed(nav, events)
            del events[:]
            if nav.done:
                break
        else:
            try:
                coro.close()
            except ijson.JSONError as exc:
                raise InvalidRequest(f"{source_id} is not a complete JSON document: "
                                     f"{str(exc).splitlines()[0][:120]}") from None
            _feed(nav, events)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    if nav.found is None:
        raise InvalidRequest(f'no value at path="{path}" in {source_id}')
    container = nav.found in ("object", "array")
    if container and not nav.eof and nav.children <= offset:
        raise InvalidRequest(f'offset {offset} is beyond the end of path="{path}"')
    if container and nav.eof and offset and offset >= nav.children:
        raise InvalidRequest(f'offset {offset} is beyond the end of path="{path}": it has '
                             f"{nav.children} elements")
    shown = len(nav.rows)
    return JsonPage(source_id=source_id, path=path, kind=nav.found, offset=offset if container else 0,
                    rows=tuple(nav.rows), eof=nav.eof,
                    next_offset=None if nav.eof or not container else offset + shown,
                    total_elements=nav.children if container and nav.eof else None,
                    bytes_scanned=scanned, size_bytes=size_bytes)
