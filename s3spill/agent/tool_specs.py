"""What a model is told about its retrieval tools: descriptions, argument and result schemas.

Why apart from :mod:`.tools`: these words and schemas are the tools' contract with the
model, declared four ways (an MCP server, chat-API specs for a harness, the framework
adapters, the reference agent) from this one place; :class:`~.tools.AgentTools` is the
behaviour behind them. The limits a schema states (pages, matches, context, bytes) are
the ones the tools enforce, so they are defined or imported here once.
"""

from __future__ import annotations

from typing import Any, Literal

from s3spill.agent.listing import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT
from s3spill.artifacts.grep.engine import DEFAULT_MAX_MATCHES, MAX_CONTEXT
from s3spill.artifacts.paging import DEFAULT_LIMIT
from s3spill.typed.bytepage import DEFAULT_BYTES, MAX_BYTES

Dialect = Literal["openai", "anthropic", "mcp"]

#: The same defaults as ``s3spill read`` / ``s3spill grep`` (defined once, in the artifacts
#: layer): 2,000 lines is the design's per-tool line limit, and the page's character
#: budget (``DEFAULT_MAX_CHARS``, and the policy's budget for the read tool) bounds what a
#: page costs whatever the lines are like.
DEFAULT_PAGE_LINES = DEFAULT_LIMIT
DEFAULT_GREP_MATCHES = DEFAULT_MAX_MATCHES
#: Most matches one call may ask for (the result is cut further to the grep tool's budget).
MAX_GREP_MATCHES = 200
SOURCE_ID_HELP = (
    'The source_id from an s3spill pointer: the text after stored as source_id="…", e.g. '
    "artifact:<32 hex>:<name>:<16 hex>; or live:<32 hex>:<name> for the output of a command "
    "running in the background (what is committed so far). Copy it exactly."
)

READ_DESCRIPTION = """\
Read one page of a stored tool output (an "artifact").

When a tool's output was too large for your context, you received a pointer instead: a \
preview (the first and last part of the output), a marker saying how many bytes and which \
lines were omitted, and a line `stored as source_id="artifact:…"`. The complete output is \
stored; use this tool to read any part of it. Do not re-run the command to see its output \
again: it is already stored, unchanged, and re-running may not reproduce it.

Each page starts with a header `[<source_id> | lines A-B of N | size]`, then numbered lines \
(`   123<TAB>text`), and ends with a footer that says how to continue:
- `[more lines follow; continue with offset=X, char_offset=0]`: call again with offset=X.
- `[line L is cut at char C; continue with offset=X, char_offset=C]`: a very long line \
did not fit; call again with exactly these offset and char_offset values to read on.
- `[EOF: …]`: this page reaches the end of the output.

offset is the number of lines to skip: offset=0 starts at line 1, offset=999 starts at \
line 1000. To read around a line number L found by grep_artifact, use offset=L-1 (or a few \
lines less for context). Pages are limited in size, so a page may hold fewer than `limit` \
lines; the footer is always exact.

Some outputs are not plain text, and their pointer says so and how to read them: a binary \
output is read as a hexdump with byte_offset (and bytes); a JSON document by path (a JSON \
Pointer; offset and limit then count elements); a CSV/TSV table by record_offset (whole \
records, the header repeated). Use these only when the pointer mentions them."""

GREP_DESCRIPTION = """\
Search a stored tool output (an "artifact", named by the source_id in an s3spill pointer) \
with a regular expression, line by line, like grep. Use it to find errors, test failures \
or any text in an output that was too large for your context, instead of re-running the \
command (its full output is already stored).

Returns each matching line with its 1-based line number (`  1234:<TAB>text`; context \
lines are marked with `-`), long lines as an excerpt around the match, and a footer with \
the total number of matching lines. To read around a match at line L, call \
read_artifact(source_id, offset=L-1). The pattern is a regular expression in RE2 syntax \
(Python-like, but no backreferences or lookarounds); add (?i) at its start to ignore case."""

LIST_DESCRIPTION = """\
List the tool outputs stored in this session (artifacts), newest first: one line each with \
its source_id, when it was stored, the tool (and call id) that produced it, its size in bytes \
and lines, and a one-line summary. Use it to find an output whose pointer is no longer in \
your context, instead of re-running the command; then read_artifact or grep_artifact it by \
its source_id. Commands still running in the background come first, by their live: id \
(readable while they run)."""

#: Human-facing titles (MCP ``title``), by tool kind.
TITLES = {"read": "Read a stored tool output", "grep": "Search a stored tool output",
          "list": "List stored tool outputs"}

EXTERNALIZE_DESCRIPTION = """\
For the harness, not the model: pass a tool's complete output; it is stored as an \
artifact when it is over the spill policy's threshold and the text to put in the model's \
context is returned (the output itself when small, otherwise a bounded preview plus a \
pointer that names the source_id and the read/grep tools)."""


def parameters(name: str) -> dict[str, Any]:
    """JSON schemas of the tool arguments (shared by the MCP server and chat-API specs)."""
    sid = {"type": "string", "description": SOURCE_ID_HELP}
    if name == "list":
        return {
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIST_LIMIT,
                          "default": DEFAULT_LIST_LIMIT, "description": "Most artifacts to list."},
            },
        }
    if name == "read":
        return {
            "type": "object",
            "properties": {
                "source_id": sid,
                "offset": {"type": "integer", "minimum": 0, "default": 0,
                           "description": "Lines to skip (0 = start at line 1); take it from the "
                           "previous page's footer."},
                "limit": {"type": "integer", "minimum": 1, "default": DEFAULT_PAGE_LINES,
                          "description": "Most lines to return (the page may stop earlier)."},
                "char_offset": {"type": "integer", "minimum": 0, "default": 0,
                                "description": "Continue a very long line from this character, "
                                "as the previous page's footer says; otherwise 0."},
                "byte_offset": {"type": "integer", "minimum": 0,
                                "description": "Binary outputs: read a hexdump from this byte "
                                "(the pointer and each page's footer say when this applies)."},
                "bytes": {"type": "integer", "minimum": 1, "maximum": MAX_BYTES,
                          "description": f"Binary outputs: bytes to show (default {DEFAULT_BYTES})."},
                "path": {"type": "string", "description": "JSON outputs: a JSON Pointer (RFC 6901, "
                         'e.g. "/items/0/name"; "" is the whole document). Shows that value; an '
                         "object or array is paged by element: offset and limit then count "
                         "elements."},
                "record_offset": {"type": "integer", "minimum": 0,
                                  "description": "CSV/TSV outputs: records to skip (0 = from the "
                                  "header); a page shows whole records and repeats the header."},
                "since": {"type": "integer", "minimum": 0,
                          "description": "Of a running command's output (source_id live:…): "
                          "start at this byte, as its previous page's footer says, to read only "
                          "what is new. Omit otherwise."},
            },
            "required": ["source_id"],
        }
    return {
        "type": "object",
        "properties": {
            "source_id": sid,
            "pattern": {"type": "string", "description": "Regular expression (RE2 syntax: no "
                        "backreferences or lookarounds), matched against each line; (?i) ignores "
                        "case."},
            "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "default": 0,
                        "description": "Lines of context to show before and after each match."},
            "max_matches": {"type": "integer", "minimum": 1, "maximum": MAX_GREP_MATCHES,
                            "default": DEFAULT_GREP_MATCHES,
                            "description": "Matching lines to show; the rest are counted."},
        },
        "required": ["source_id", "pattern"],
    }


_NULLABLE_INT = {"type": ["integer", "null"]}


def output_schema(kind: str) -> dict[str, Any]:
    """JSON schema of a tool's structured result (MCP ``outputSchema``).

    ``text`` is what the model reads (the same as the text content), so a host that
    passes only structured content to its model loses nothing; the other fields let a
    harness continue or count without parsing the text.
    """
    if kind == "read":
        props: dict[str, Any] = {
            "source_id": {"type": "string"}, "first_line": _NULLABLE_INT, "last_line": _NULLABLE_INT,
            "total_lines": {"type": "integer"}, "size_bytes": {"type": "integer"}, "eof": {"type": "boolean"},
            "next_offset": _NULLABLE_INT, "next_char_offset": _NULLABLE_INT, "text": {"type": "string"},
            "output_kind": {"type": "string", "description": "text, binary, json, ndjson, csv or tsv."},
            "byte_offset": _NULLABLE_INT, "next_byte_offset": _NULLABLE_INT,
            "path": {"type": ["string", "null"], "description": "The JSON Pointer read, if any."},
            "record_offset": _NULLABLE_INT, "next_record_offset": _NULLABLE_INT}
    elif kind == "grep":
        props = {
            "source_id": {"type": "string"}, "pattern": {"type": "string"},
            "total_matches": {"type": "integer"}, "exact": {"type": "boolean"},
            "line_numbers": {"type": "array", "items": {"type": "integer"},
                             "description": "1-based numbers of the matching lines shown."},
            "omitted": {"type": "integer"}, "text": {"type": "string"}}
    else:
        entry = {"type": "object", "properties": {
            "source_id": {"type": "string"}, "created_at": {"type": "string", "format": "date-time"},
            "tool": {"type": "string"}, "call_id": {"type": ["string", "null"]},
            "label": {"type": ["string", "null"]}, "size_bytes": {"type": "integer"},
            "line_count": {"type": "integer"}, "summary": {"type": "string"}},
            "required": ["source_id", "created_at", "tool", "size_bytes", "line_count", "summary"]}
        running = {"type": "object", "properties": {
            "source_id": {"type": "string"}, "status": {"type": "string"},
            "committed_bytes": {"type": "integer"}, "line_count": {"type": "integer"}},
            "required": ["source_id", "status", "committed_bytes", "line_count"]}
        props = {"total": {"type": "integer"}, "shown": {"type": "integer"},
                 "unreadable": {"type": "integer"}, "artifacts": {"type": "array", "items": entry},
                 "running": {"type": "array", "items": running,
                             "description": "Background commands whose output is readable by its"
                             " live: id while they run."}}
    return {"type": "object", "properties": props, "required": sorted(props)}


def specs(declared: list[tuple[str, str, str]], dialect: Dialect = "openai") -> list[dict[str, Any]]:
    """Tool declarations in the shape a chat API expects (``openai``: Chat Completions
    and Responses-style ``function`` tools; ``anthropic``: Messages API tools; ``mcp``:
    with ``title`` and ``outputSchema``), for ``(name, kind, description)`` triples."""
    out: list[dict[str, Any]] = []
    for name, kind, description in declared:
        params = parameters(kind)
        if dialect == "openai":
            out.append({"type": "function", "function": {
                "name": name, "description": description, "parameters": params}})
        elif dialect == "anthropic":
            out.append({"name": name, "description": description, "input_schema": params})
        else:
            out.append({"name": name, "title": TITLES[kind], "description": description,
                        "inputSchema": params, "outputSchema": output_schema(kind)})
    return out
