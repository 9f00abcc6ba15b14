"""JSON-RPC messages as the proxy reads and writes them: parse, encode, the errors it sends.

Why two parsers: orjson is fast but refuses what some real servers send — a lone
surrogate escape (``"caf\\udce9"``, what a Python server writes for a file name decoded
with ``surrogateescape``) or raw bytes that are not UTF-8. Such a line is parsed again by
the standard library, with invalid bytes decoded by ``surrogateescape``: each becomes
``\\udc80``-``\\udcff``, the same code point as its escaped spelling, which the spill
turns back into that byte (:func:`s3spill.context.retention.to_bytes`). A line neither
parser reads is :data:`MALFORMED`: the proxy answers a client's with a JSON-RPC parse
error and drops an upstream's with a log line; it never forwards it.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported: the handshake is answered before the spill path loads
    from s3spill.spill.json_spool import Spool

#: JSON-RPC 2.0 error codes the proxy answers with.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INTERNAL_ERROR: Final = -32603
#: The SDKs' code for a request that timed out (``ErrorCode.RequestTimeout``).
REQUEST_TIMEOUT: Final = -32001


class _Malformed:
    def __repr__(self) -> str:
        return "MALFORMED"


#: What :func:`parse` returns for a line that is not JSON.
MALFORMED: Final = _Malformed()


def parse(line: bytes) -> Any:
    """The message on ``line``, or :data:`MALFORMED`."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(line.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return MALFORMED


def parse_spooled(spool: Spool) -> Any:
    """The skeleton of a spooled line (its long strings as placeholders), or :data:`MALFORMED`."""
    return MALFORMED if spool.scanned is None else parse(spool.scanned[0])


def encode(message: Any) -> bytes:
    """One message as JSON bytes (a string with a lone surrogate is written as its escape)."""
    try:
        return orjson.dumps(message)
    except TypeError:
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def error(mid: Any, code: int, message: str) -> bytes:
    """A JSON-RPC error response."""
    return encode({"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}})


def is_id(value: Any) -> bool:
    """MCP request ids are strings or integers (never null, never a bool)."""
    return isinstance(value, str | int) and not isinstance(value, bool)
