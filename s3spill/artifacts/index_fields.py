"""The artifact index's fields and their checks, by hand: what its pydantic model checked.

Why by hand: a page read (``s3spill read``, ``grep``) is a process of its own, and
pydantic's import and the build of the index model were most of it (issue 35). The index
is untrusted storage input, so every check the model made is kept here: unknown and
missing fields; each field's type; the digests and the session hash as lowercase hex of
their length; sizes and counts ``>= 0``, the chunk size ``>= 16``; the summary at most
500 and the description at most 200 characters; the literal kind, schema version (1 or
2), codec and output kind. The checks that tie the fields together (chunk tables against
the size, the line count against the newline counts, the frame table) stay with the
index (:meth:`~s3spill.artifacts.index.ArtifactIndex._consistent`), in the same words.

Types are checked strictly, where the model's lax mode coerced: a number written as a
string, ``true`` for an integer or a whole float (``5.0``) is refused here, and
``created_at`` must be an ISO 8601 string. Our writer writes none of these (its JSON is
the model's, byte for byte), so an index it wrote reads as before and a damaged one is
refused at least where the model refused it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing (~2 ms): the CLI's fast read checks an index with this module
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

__all__ = ["FIELDS", "OUTPUT_KINDS", "IndexInvalid", "check_consistent", "check_iso", "check_names",
           "check_values", "parse_fields", "parse_iso"]


class IndexInvalid(ValueError):
    """An index that does not parse, or whose fields are wrong or disagree."""


#: The fields in the order the model declared (and serialized) them, with their defaults
#: (``...``: required).
FIELDS: dict[str, Any] = {
    "schema_version": 2, "kind": "artifact_index", "session_hash": ..., "name": ...,
    "size_bytes": ..., "line_count": ..., "ends_with_newline": ..., "sha256": ..., "created_at": ...,
    "tool": ..., "call_id": None, "label": None, "summary": ..., "chunk_size": ...,
    "chunk_sha256": ..., "chunk_newlines": ..., "chunk_units": ..., "chunk_carry": ...,
    "chunk_lastline_units": ..., "codec": "identity", "chunk_stored": (), "body_etag": None,
    "output_kind": "text", "output_description": None, "chunk_records": (), "chunk_quoted": (),
}
_REQUIRED = frozenset(name for name, default in FIELDS.items() if default is ...)
_INT_TABLES = ("chunk_newlines", "chunk_units", "chunk_carry", "chunk_lastline_units", "chunk_stored",
               "chunk_records")
_HEX = "0123456789abcdef"
_CODECS = ("identity", "zstd")
#: As :data:`s3spill.artifacts.index.OutputKind` (a test keeps the two equal).
OUTPUT_KINDS = ("text", "binary", "json", "ndjson", "csv", "tsv")


def parse_fields(raw: bytes | str) -> dict[str, Any]:
    """The fields of an index's JSON, to be checked; IndexInvalid if not JSON
    of an object (orjson: UTF-8 only, no lone surrogates, as the model's parser)."""
    import orjson  # ~10 ms in a fresh process: the fast read parses with a stricter json (read_fast)

    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise IndexInvalid(f"the index is not JSON: {exc}") from None
    if type(data) is not dict:
        raise IndexInvalid("the index is not a JSON object")
    return data


def check_names(data: dict[str, Any]) -> None:
    """No unknown field and every required one (the model's ``extra="forbid"`` and requirements)."""
    unknown = data.keys() - FIELDS.keys()
    if unknown:
        raise IndexInvalid(f"unknown index fields: {', '.join(sorted(map(str, unknown)))}")
    missing = _REQUIRED - data.keys()
    if missing:
        raise IndexInvalid(f"missing index fields: {', '.join(sorted(missing))}")


def check_values(out: dict[str, Any], *, times: bool = True) -> dict[str, Any]:
    """Each field of its type and within its bounds (``out`` holds them all); returns ``out``
    with the tables as tuples and ``created_at`` as a datetime (``times=False``: checked as one,
    left as given: the fast read needs no datetime). IndexInvalid names the field."""
    _check_scalars(out, times)
    for name in _INT_TABLES:
        out[name] = _table(out, name, int)
    out["chunk_sha256"] = _table(out, "chunk_sha256", str)
    out["chunk_quoted"] = _table(out, "chunk_quoted", bool)
    return out


def _check_scalars(out: dict[str, Any], times: bool = True) -> None:
    v = out["schema_version"]
    _require(type(v) is int and v in (1, 2), "schema_version", "is not 1 or 2")
    _require(out["kind"] == "artifact_index", "kind", "is not artifact_index")
    _require(_is_hex(out["session_hash"], 32), "session_hash", "is not 32 hex digits")
    _require(_is_hex(out["sha256"], 64), "sha256", "is not 64 hex digits")
    for name in ("size_bytes", "line_count"):
        _require(type(out[name]) is int and out[name] >= 0, name, "is not an integer >= 0")
    _require(type(out["chunk_size"]) is int and out["chunk_size"] >= 16, "chunk_size",
             "is not an integer >= 16")
    _require(type(out["ends_with_newline"]) is bool, "ends_with_newline", "is not a boolean")
    for name in ("name", "tool"):
        _require(type(out[name]) is str, name, "is not a string")
    for name in ("call_id", "label", "body_etag"):
        _require(out[name] is None or type(out[name]) is str, name, "is not a string or null")
    _require(type(out["summary"]) is str and len(out["summary"]) <= 500, "summary",
             "is not a string of at most 500 characters")
    d = out["output_description"]
    _require(d is None or (type(d) is str and len(d) <= 200), "output_description",
             "is not null or a string of at most 200 characters")
    _require(type(out["codec"]) is str and out["codec"] in _CODECS, "codec", "is not identity or zstd")
    _require(type(out["output_kind"]) is str and out["output_kind"] in OUTPUT_KINDS, "output_kind",
             "is not a known output kind")
    out["created_at"] = _datetime(out["created_at"]) if times else _checked_time(out["created_at"])


def _require(ok: bool, name: str, what: str) -> None:
    if not ok:
        raise IndexInvalid(f"index field {name} {what}")


def _is_hex(value: object, n: int) -> bool:
    return type(value) is str and len(value) == n and not value.strip(_HEX)


def _datetime(value: object) -> datetime:
    if type(value) is not str:
        if isinstance(value, _datetime_type()):
            return value
        raise IndexInvalid("index field created_at is not an ISO 8601 date and time")
    try:
        return parse_iso(value)
    except ValueError:
        raise IndexInvalid("index field created_at is not an ISO 8601 date and time") from None


def _checked_time(value: object) -> object:
    """``value`` when :func:`_datetime` would take it, refused as it refuses it."""
    if type(value) is not str:
        return _datetime(value)
    try:
        check_iso(value)
    except ValueError:
        raise IndexInvalid("index field created_at is not an ISO 8601 date and time") from None
    return value


def _datetime_type() -> type[datetime]:
    if TYPE_CHECKING:
        from datetime import datetime
    else:
        try:  # the C type ``datetime.datetime`` is, without the ~1 ms of the module's Python half
            from _datetime import datetime
        except ImportError:  # an interpreter without the C module
            from datetime import datetime
    return datetime


def parse_iso(value: str) -> datetime:
    """``datetime.fromisoformat(value)`` (a ValueError when it is none), without importing the
    :mod:`datetime` module's Python half (the fast read checks two timestamps with it)."""
    return _datetime_type().fromisoformat(value)


def check_iso(value: str) -> None:
    """A ValueError where :func:`parse_iso` raises one. A UTC time in the shape this package's
    writers give it (:func:`_plain_utc`) is checked field by field, without the ``_datetime``
    extension, whose load was ~0.8 ms of a fresh read's process; any other string by
    :func:`parse_iso` itself (tests/artifacts/test_check_iso.py compares the two)."""
    plain = _plain_utc(value)
    if plain is None:
        parse_iso(value)
    elif not plain:
        raise ValueError(f"Invalid isoformat string: {value!r}")


#: Days of each month of a common year.
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _plain_utc(value: str) -> bool | None:
    """Does ``datetime.fromisoformat`` read ``value``, when it is ``YYYY-MM-DDTHH:MM:SS``, then
    ``.`` and six digits or nothing, then ``Z`` or ``+00:00`` (ASCII digits only)? None for any
    other shape: this does not say."""
    if len(value) not in (20, 25, 27, 32) or not value.isascii():
        return None
    fraction = len(value) in (27, 32)  # the shape's lengths: 19, then 7 or none, then 1 or 6
    if (fraction and value[19] != ".") or value[26 if fraction else 19:] not in ("Z", "+00:00"):
        return None
    fields = (value[0:4], value[5:7], value[8:10], value[11:13], value[14:16], value[17:19])
    if (value[4], value[7], value[10], value[13], value[16]) != ("-", "-", "T", ":", ":") or not all(
            f.isdigit() for f in fields) or (fraction and not value[20:26].isdigit()):
        return None
    year, month, day, hour, minute, second = map(int, fields)
    if not (year >= 1 and 1 <= month <= 12 and hour <= 23 and minute <= 59 and second <= 59):
        return False
    leap = month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= _MONTH_DAYS[month - 1] + leap


def _table(out: dict[str, Any], name: str, kind: type) -> tuple[Any, ...]:
    value = out[name]
    if type(value) not in (list, tuple) or any(type(x) is not kind for x in value):
        raise IndexInvalid(f"index field {name} is not a list of {kind.__name__} values")
    return tuple(value)


def check_consistent(v: dict[str, Any]) -> None:
    """The fields agree: frame table, chunk tables, line count, unit bookkeeping."""
    n = -(-v["size_bytes"] // v["chunk_size"])
    if v["schema_version"] == 1:
        if v["codec"] != "identity" or v["chunk_stored"] or v["body_etag"] is not None:
            raise IndexInvalid("a version 1 index has no storage or commit fields")
    elif len(v["chunk_stored"]) != n or any(s < 1 for s in v["chunk_stored"]) or (
            v["codec"] == "identity" and v["chunk_stored"] != tuple(
                min(v["chunk_size"], v["size_bytes"] - k * v["chunk_size"])
                for k in range(n))) or not v["body_etag"]:
        raise IndexInvalid("frame table or body ETag disagrees with the artifact")
    arrays = (v["chunk_sha256"], v["chunk_newlines"], v["chunk_units"],
              v["chunk_carry"], v["chunk_lastline_units"])
    if any(len(a) != n for a in arrays) or ((v["chunk_records"] or v["chunk_quoted"]) and (
            len(v["chunk_records"]) != n or len(v["chunk_quoted"]) != n)):
        raise IndexInvalid("chunk arrays do not match the artifact size")
    newlines = sum(v["chunk_newlines"])
    partial = 0 if v["size_bytes"] == 0 or v["ends_with_newline"] else 1
    empty_with_newline = v["size_bytes"] == 0 and v["ends_with_newline"]
    if v["line_count"] != newlines + partial or empty_with_newline:
        raise IndexInvalid("line count disagrees with the chunk newline counts")
    if any(not 0 <= c <= 3 for c in v["chunk_carry"]) or any(
        u < -1 for u in v["chunk_lastline_units"]
    ):
        raise IndexInvalid("bad unit bookkeeping")
