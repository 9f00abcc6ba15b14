"""Which page a read asks for — lines, a hexdump, a JSON value, CSV records — and its data.

Why apart from :mod:`s3spill.agent.tools`: the read tool has one name and one schema for
every kind of output, so the choice of reader (by the arguments given, else by the kind
the index records) and the structured result of each reader (one schema: fields that do
not apply are null) are kept together here; the tools module only fits the chosen page to
the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from s3spill import keys
from s3spill.artifacts.paging import Page
from s3spill.artifacts.store import ArtifactStore
from s3spill.errors import InvalidRequest
from s3spill.live import reader as live_reader
from s3spill.typed.bytepage import DEFAULT_BYTES, BytePage
from s3spill.typed.jsonpath import JsonPage
from s3spill.typed.recordpage import RecordPage

#: A page built within ``max_chars``: its text and its structured facts.
Build = Callable[[int], tuple[str, dict[str, Any]]]


def page_reader(artifacts: ArtifactStore, session_id: str, source_id: str, *, offset: int, limit: int,
                char_offset: int, byte_offset: int | None, nbytes: int | None, path: str | None,
                record_offset: int | None, since: int | None = None) -> Build:
    """The reader the arguments ask for; a binary artifact defaults to its hexdump, a live
    output (``live:...``, or ``since`` given) is read by line."""
    if keys.is_live_id(source_id) or since is not None:
        if path is not None or byte_offset is not None or nbytes is not None or (
                record_offset is not None):
            raise InvalidRequest("a running command's output (or a read with since) is read by"
                                 " line: path, byte_offset, bytes and record_offset do not apply")
        return _lines(artifacts, session_id, source_id, offset, limit, char_offset, since, "text")
    if record_offset is not None:
        if path is not None or byte_offset is not None or nbytes is not None or char_offset:
            raise InvalidRequest("record_offset reads CSV/TSV records: path, byte_offset, "
                                 "bytes and char_offset do not apply")

        def records(max_chars: int) -> tuple[str, dict[str, Any]]:
            got = artifacts.read_records(source_id, record_offset, limit=limit, max_chars=max_chars,
                                         session_id=session_id)
            text = got.render()
            return text, _record_data(got, text)

        return records
    if path is not None:
        if byte_offset is not None or nbytes is not None or char_offset:
            raise InvalidRequest("path reads a JSON value: byte_offset, bytes and char_offset"
                                 " do not apply")

        def value(max_chars: int) -> tuple[str, dict[str, Any]]:
            got = artifacts.read_json(source_id, path, offset=offset, limit=limit,
                                      max_chars=max_chars, session_id=session_id)
            text = got.render()
            return text, _json_data(got, text)

        return value
    if byte_offset is None and nbytes is None:
        kind = artifacts.index(source_id, session_id=session_id).output_kind
    else:
        kind = "binary"
    if kind == "binary":
        def hexdump(max_chars: int) -> tuple[str, dict[str, Any]]:
            got = artifacts.read_bytes(source_id, byte_offset=byte_offset or 0,
                                       nbytes=nbytes or DEFAULT_BYTES, max_chars=max_chars,
                                       session_id=session_id)
            text = got.render()
            return text, _byte_data(got, text)

        return hexdump

    return _lines(artifacts, session_id, source_id, offset, limit, char_offset, None, kind)


def _lines(artifacts: ArtifactStore, session_id: str, source_id: str, offset: int, limit: int,
           char_offset: int, since: int | None, kind: str) -> Build:
    def lines(max_chars: int) -> tuple[str, dict[str, Any]]:
        page = live_reader.read_page(artifacts, source_id, offset=offset, limit=limit,
                                     char_offset=char_offset, max_chars=max_chars, since=since,
                                     session_id=session_id)
        text = page.render()
        return text, _page_data(page, text, kind)

    return lines


_NULLS = {"first_line": None, "last_line": None, "next_offset": None, "next_char_offset": None,
          "byte_offset": None, "next_byte_offset": None, "path": None, "record_offset": None,
          "next_record_offset": None}


def _common(source_id: str, kind: str, size_bytes: int, eof: bool, text: str) -> dict[str, Any]:
    return {**_NULLS, "source_id": source_id, "output_kind": kind, "total_lines": 0,
            "size_bytes": size_bytes, "eof": eof, "text": text}


def _page_data(page: Page, text: str, kind: str = "text") -> dict[str, Any]:
    return {**_common(page.source_id, kind, page.size_bytes, page.eof, text),
            "first_line": page.lines[0].number if page.lines else None,
            "last_line": page.lines[-1].number if page.lines else None,
            "total_lines": page.total_lines, "next_offset": page.next_offset,
            "next_char_offset": page.next_char_offset}


def _record_data(page: RecordPage, text: str) -> dict[str, Any]:
    """A CSV/TSV record page: record offsets, not lines."""
    return {**_common(page.source_id, page.kind, page.size_bytes, page.eof, text),
            "record_offset": page.record_offset, "next_record_offset": page.next_record_offset}


def _json_data(page: JsonPage, text: str) -> dict[str, Any]:
    """A JSON Pointer page: ``next_offset`` counts elements, not lines."""
    return {**_common(page.source_id, "json", page.size_bytes, page.eof, text),
            "next_offset": page.next_offset, "path": page.path}


def _byte_data(page: BytePage, text: str) -> dict[str, Any]:
    """A hexdump page: byte offsets, no line fields."""
    return {**_common(page.source_id, "binary", page.size_bytes, page.eof, text),
            "byte_offset": page.byte_offset, "next_byte_offset": page.next_byte_offset}
