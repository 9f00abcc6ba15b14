"""Artifacts as MCP resources: ``s3spill://<session>/<artifact>``, read a page at a time.

Why resources as well as the read tool: a client that understands MCP resources (a
``resource_link`` in a result, ``resources/read``) can fetch a stored output natively,
without the model spending a tool call per page; the read and grep tools stay for the
clients that do not. Both are the same reads, bound to the same one session.

The URI is the source id spelled as a URI: ``artifact:<session_hash>:<name>:<sha>`` is
``s3spill://<session_hash>/<name>:<sha>``. A page is chosen by the read tool's own
arguments as a query — ``?offset=N&char_offset=M&limit=L`` — and each page's ``_meta``
names the URI of the next one (``s3spill.next``), so following it to ``eof`` gives back
every byte (pages are rendered as the read tool renders them:
:func:`s3spill.artifacts.paging.unrender` inverts each).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

from s3spill.agent.tools import AgentTools, error_line
from s3spill.errors import IntegrityError, InvalidRequest, NotFound, S3SpillError, SourceIdError

SCHEME = "s3spill"
PREFIX = f"{SCHEME}://"
#: The JSON-RPC error of a resource that does not exist (MCP "Resource not found").
RESOURCE_NOT_FOUND = -32002
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
_QUERY = ("offset", "char_offset", "limit")
TEMPLATE: dict[str, Any] = {
    "uriTemplate": PREFIX + "{session}/{artifact}{?offset,char_offset,limit}",
    "name": "s3spill-artifact-page",
    "title": "A page of a stored tool output",
    "description": "One page of an output s3spill stored in this session (offset: first line, "
    "0-based; char_offset: within a very long line; limit: lines). Each page's _meta.s3spill.next "
    "is the URI of the next page.",
    "mimeType": "text/plain",
}


def is_ours(uri: Any) -> bool:
    return isinstance(uri, str) and uri.startswith(PREFIX)


def uri_of(source_id: str, **query: int) -> str:
    """The resource URI of a source id (with a page query when given one)."""
    parts = source_id.split(":", 2)
    if len(parts) != 3 or parts[0] != "artifact":
        raise SourceIdError("malformed source id")
    uri = f"{PREFIX}{parts[1]}/{parts[2]}"
    shown = [f"{key}={value}" for key, value in query.items() if value]
    return uri + ("?" + "&".join(shown) if shown else "")


def parse_uri(uri: str) -> tuple[str, dict[str, int]]:
    """(source id, page arguments) of one of our URIs; SourceIdError or InvalidRequest if bad."""
    split = urlsplit(uri)
    if split.scheme != SCHEME or not split.netloc or not split.path.startswith("/") or split.fragment:
        raise SourceIdError(f"not an s3spill artifact URI: {uri[:200]!r}")
    query: dict[str, int] = {}
    for key, value in parse_qsl(split.query, keep_blank_values=True, strict_parsing=bool(split.query)):
        if key not in _QUERY or not value.isdigit():
            raise InvalidRequest(f"resource query takes {', '.join(_QUERY)} as whole numbers, "
                                 f"got {key}={value!r}")
        query[key] = int(value)
    return f"artifact:{split.netloc}:{split.path[1:]}", query


class ArtifactResources:
    """``resources/list`` and ``resources/read`` over one session's artifacts (blocking I/O)."""

    def __init__(self, tools: AgentTools) -> None:
        self.tools = tools

    def listing(self) -> list[dict[str, Any]]:
        """This session's stored outputs as MCP ``Resource`` objects, newest first."""
        outcome = self.tools.list_outcome()
        entries = (outcome.structured or {}).get("artifacts", []) if not outcome.is_error else []
        return [{"uri": uri_of(entry["source_id"]), "name": entry["source_id"],
                 "title": f"{entry['tool']} output, {entry['size_bytes']} bytes, {entry['line_count']} lines",
                 "description": entry["summary"], "mimeType": "text/plain", "size": entry["size_bytes"]}
                for entry in entries]

    def read(self, uri: str) -> dict[str, Any]:
        """``{"result": ReadResourceResult}`` — one page, ``_meta.s3spill`` saying where it is
        and what is next — or ``{"error": {code, message}}``: -32002 for an artifact that
        cannot be read (unknown, expired, another session's, damaged), -32602 for a bad query."""
        try:
            source_id, query = parse_uri(uri)
        except SourceIdError as exc:
            return _error(RESOURCE_NOT_FOUND, f"Resource not found: {exc}")
        except InvalidRequest as exc:
            return _error(INVALID_PARAMS, str(exc))
        offset, char_offset = query.get("offset", 0), query.get("char_offset", 0)
        try:
            if "limit" in query:
                outcome = self.tools.read_outcome(source_id, offset, max(1, query["limit"]), char_offset)
            else:
                outcome = self.tools.read_outcome(source_id, offset, char_offset=char_offset)
        except (SourceIdError, NotFound, IntegrityError) as exc:
            return _error(RESOURCE_NOT_FOUND, f"Resource not found: {error_line(exc)}")
        except InvalidRequest as exc:
            return _error(INVALID_PARAMS, error_line(exc))
        except S3SpillError as exc:  # the store is unreachable, say: the client may retry
            return _error(INTERNAL_ERROR, error_line(exc))
        if outcome.is_error or outcome.structured is None:
            return _error(RESOURCE_NOT_FOUND, f"Resource not found: {outcome.text}")
        data = outcome.structured
        facts = {key: data.get(key) for key in ("first_line", "last_line", "total_lines", "size_bytes", "eof",
                                                "next_offset", "next_char_offset")}
        if not data.get("eof"):
            facts["next"] = uri_of(source_id, offset=data.get("next_offset") or 0,
                                   char_offset=data.get("next_char_offset") or 0,
                                   **({"limit": query["limit"]} if "limit" in query else {}))
        return {"result": {"contents": [{"uri": uri, "mimeType": "text/plain", "text": outcome.text,
                                         "_meta": {SCHEME: facts}}]}}


def _error(code: int, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}
