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
import re
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
    """The skeleton of a spooled line (its long strings as placeholders), or :data:`MALFORMED`
    when :func:`parse` would refuse the whole line: the skeleton, or a long string with an
    escape JSON has not or a raw control character (checked in the file, not decoded)."""
    if spool.scanned is None:
        return MALFORMED
    msg = parse(spool.scanned[0])
    if msg is MALFORMED or not all(long.well_formed() for long in spool.longs().values()):
        return MALFORMED
    return msg


def encode(message: Any) -> bytes:
    """One message as JSON bytes (a string with a lone surrogate is written as its escape).

    Lone surrogates come only from the fallback parser, and two of them can be neighbours: the
    escape ``\\ud800`` right before a byte that is not UTF-8 (held as ``\\udce9``). Written
    as two escapes they would read as one astral character; so a lone high surrogate followed
    by a low one is written as the ``\\xHH`` escapes of its WTF-8 bytes (how pages show it),
    and the byte after it stays its escape.
    """
    try:
        return orjson.dumps(message)
    except TypeError:
        return json.dumps(_unpaired(message), ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _unpaired(value: Any) -> Any:
    """``value`` with no lone high surrogate directly before a low one, in keys or strings."""
    if isinstance(value, str):
        return _HIGH_BEFORE_LOW.sub(_shown, value) if _HIGH_BEFORE_LOW.search(value) else value
    if isinstance(value, dict):
        return {_unpaired(k): _unpaired(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_unpaired(v) for v in value]
    return value


def _shown(match: re.Match[str]) -> str:
    return "".join(f"\\x{b:02x}" for b in match.group().encode("utf-8", "surrogatepass"))


_HIGH_BEFORE_LOW: Final = re.compile(r"[\ud800-\udbff](?=[\udc00-\udfff])")


def error(mid: Any, code: int, message: str) -> bytes:
    """A JSON-RPC error response."""
    return encode({"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}})


def is_id(value: Any) -> bool:
    """MCP request ids are strings or integers (never null, never a bool)."""
    return isinstance(value, str | int) and not isinstance(value, bool)
