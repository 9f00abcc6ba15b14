"""``s3spill read`` of a page from a local store, answered before argparse and the store layer load.

Why a path of its own: a model's every page read is a process of its own, and the full CLI
(argparse, the store layer's dataclasses, orjson, the artifact records) cost 2-3x a plain
Python program that opens the file, checks its SHA-256 and splits its lines (issue 35).
This module imports the standard library's ``os``, ``sys``, ``json``, ``hashlib`` and
``stat``, and of the package only what a page needs and nothing more: the page algorithm
(:mod:`s3spill.artifacts.pagefill`), the index checks (:mod:`s3spill.artifacts.index_fields`),
the chunk checks (:mod:`s3spill.artifacts.chunks`) and the secret triggers.

It answers only when it is sure to print what the full path prints, and otherwise returns
None and the full CLI runs as if this module did not exist (nothing was printed, nothing
written). It answers:

* a plain ``[--store PATH] [--session ID] read SOURCE_ID [--offset N] [--limit N]
  [--char-offset N] [--max-chars N] [--show-secrets]``, globals before or after; no other
  flag, no abbreviation, no repeat, each value as argparse would accept it; no ``S3SPILL_``
  variable but the store, the session and ``S3SPILL_USAGE``, and no fleet policy file;
* a local store given by an absolute path or a plain ``file://`` URL, a session named by
  flag, variable or harness;
* a version 2 artifact of that session whose body and index pass every check the full
  path makes, that is not binary (the hexdump), and — masked, as reads are by default —
  whose chunks no secret trigger matches in their context (``may_hold_secret`` of the same
  window the reader's view masks): masking would change nothing, so the page is the stored
  text. A window a trigger may match goes to the full path, which masks it.

Every check is made as the full path makes it or stricter (its JSON parser refuses what
orjson might read differently: escapes, floats, huge integers, repeated keys); any error
at all before the page is printed means the full path runs and says what is wrong in its
own words. The page is rendered by the same functions as :class:`~s3spill.artifacts.paging.Page`,
and the usage event is the same (:mod:`.usage_fast`, after the page is out).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["fast_read"]

#: ``S3SPILL_`` variables that set no flag of ``read`` (or one this path reads itself).
_QUIET_VARIABLES = frozenset({"S3SPILL_STORE", "S3SPILL_SESSION", "S3SPILL_USAGE"})
#: ``read``'s number flags and the least value each takes (``count``: 0, ``positive``: 1).
_NUMBERS = {"--offset": 0, "--limit": 1, "--char-offset": 0, "--max-chars": 1}
_GLOBALS = ("--store", "--session")
_SHOW = "--show-secrets"
#: ``S3SPILL_USAGE`` values that turn usage records off (as ``usage_recorder`` reads them).
_USAGE_OFF = ("off", "0", "false", "no")
_HARNESS_SESSION_VARIABLES = ("CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID")  # argtypes' (a test checks)
_SESSIONS = "v1/sessions"  # keys.SESSIONS (a test checks the keys this path derives)
_HEX = frozenset("0123456789abcdef")
#: The local store's object file: ... body, trailer JSON, its length (8 bytes) and magic.
_MAGIC = b"S3SPOBJ1"
_TAIL = 16
_SMALL = 1024 * 1024  # LocalStore reads objects up to this size whole
_TRAILER = {"etag": str, "size": int, "last_modified": str, "metadata": dict}


class _Unsure(Exception):
    """This path does not answer this call: the full CLI does."""


def fast_read(argv: Sequence[str]) -> int | None:
    """The exit status of a ``read`` answered here, or None: the full CLI answers."""
    try:
        call = _parse(argv)
        text, facts = _page(call)
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001 - any doubt at all: the full path decides, in its words
        return None
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()
    if not call["show_secrets"] and os.environ.get("S3SPILL_USAGE", "on").lower() not in _USAGE_OFF:
        from s3spill.cli.usage_fast import record_read

        record_read(call["root"], call["session"], call["source_id"], "read", text, facts)
    return 0


# -- the command line -----------------------------------------------------------------------

def _utf8(value: str) -> str:
    value.encode("utf-8")  # UnicodeEncodeError: argparse's usage error, said by the full path
    return value


def _parse(argv: Sequence[str]) -> dict[str, Any]:
    """The call's settings; _Unsure unless ``argv`` and the environment are plain (see the module)."""
    seen, source_id = _tokens(argv)
    environ = os.environ
    if any(name.startswith("S3SPILL_") and name not in _QUIET_VARIABLES for name in environ):
        raise _Unsure
    from s3spill.fleet.locate import store_needs_no_policy

    if not store_needs_no_policy(None, environ):
        raise _Unsure
    numbers = {}
    for flag, least in _NUMBERS.items():
        given = seen.get(flag)
        if given is not None and not (given.isascii() and given.isdigit() and int(given) >= least):
            raise _Unsure
        numbers[flag[2:].replace("-", "_")] = None if given is None else int(given)
    url = seen.get("--store") or environ.get("S3SPILL_STORE") or ""
    return {"source_id": source_id, "store": url, "root": _local_root(_utf8(url)),
            "session": _session(seen.get("--session")),
            "show_secrets": "--show-secrets" in seen, **numbers}


def _tokens(argv: Sequence[str]) -> tuple[dict[str, str], str]:
    """The flags given (each once) and the one positional of ``[globals] read ID [flags]``."""
    seen: dict[str, str] = {}
    positional: list[str] = []
    command = False
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        i += 1
        if not arg.startswith("-"):
            if not command and arg != "read":
                raise _Unsure  # another command, or a positional before it
            if command:
                positional.append(_utf8(arg))
            command = True
            continue
        name, eq, value = arg.partition("=")
        known = name in _GLOBALS or (command and (name in _NUMBERS or name == _SHOW))
        if name in seen or not known or (name == _SHOW and eq):
            raise _Unsure
        if name == _SHOW:
            seen[name] = ""
            continue
        if not eq:
            if i == len(tokens):
                raise _Unsure
            value = tokens[i]
            i += 1
        if not value or value.startswith("-"):
            raise _Unsure
        seen[name] = _utf8(value)
    if not command or len(positional) != 1:
        raise _Unsure
    return seen, positional[0]


def _local_root(url: str) -> str:
    """The directory of a local store URL as ``LocalStore.from_url`` finds it: an absolute path,
    or ``file://`` (or ``file://localhost``) and one, with nothing to unquote or split off."""
    path = url
    for scheme in ("file://localhost/", "file:///"):
        if url.startswith(scheme):
            path = url[len(scheme) - 1:]
    if not path.startswith("/") or any(c in path for c in "%?#;"):
        raise _Unsure  # S3, the default store, a relative path, or a URL with more in it
    return path


def _session(flag: str | None) -> str:
    """``--session``, ``$S3SPILL_SESSION`` or the harness's (the directory's default: the full path)."""
    found = flag or os.environ.get("S3SPILL_SESSION") or next(
        (os.environ[n] for n in _HARNESS_SESSION_VARIABLES if os.environ.get(n)), None)
    if not found:
        raise _Unsure
    return _utf8(found)


# -- the page -------------------------------------------------------------------------------

def _page(call: dict[str, Any]) -> tuple[str, dict[str, object]]:
    """The page's text and its usage facts, every byte checked; _Unsure (or any error) if not sure."""
    import hashlib

    from s3spill.artifacts import pagefill
    from s3spill.context.read_limits import DEFAULT_LIMIT, DEFAULT_MAX_CHARS

    sid = call["source_id"]
    shash, name = _source(sid)
    if hashlib.sha256(b"s3spill-session\0" + call["session"].encode("utf-8")).hexdigest()[:32] != shash:
        raise _Unsure  # another session's id: the full path says whose
    objects = _store_objects(call["root"])
    key = f"{_SESSIONS}/{shash}/artifacts/{name}"
    with _open(objects, key) as body:
        trailer = _trailer_at_end(body)
        index = _index(_whole_object(objects, key + ".idx"), trailer, shash, name, sid)
        fetch = _fetcher(index, body, trailer, sid, masked=not call["show_secrets"])
        lines, eof, nxt, _, _ = pagefill.fill(
            index, fetch, sid, offset=call["offset"] or 0,
            limit=DEFAULT_LIMIT if call["limit"] is None else call["limit"],
            char_offset=call["char_offset"] or 0,
            max_chars=DEFAULT_MAX_CHARS if call["max_chars"] is None else call["max_chars"])
    span = (lines[0][0], lines[-1][0]) if lines else None
    rows = [pagefill.header(sid, span, index.line_count, call["char_offset"] or 0, index.size_bytes)]
    rows += [pagefill.row(number, escaped, shown) for number, _, shown, escaped, _, _ in lines]
    if any(line[3] for line in lines):
        rows.append(pagefill.LEGEND)
    rows.append(pagefill.footer("cli", eof=eof, last_newline=lines[-1][5] if lines else None,
                                total_lines=index.line_count, next_offset=None if nxt is None else nxt[0],
                                next_char_offset=None if nxt is None else nxt[1]))
    facts: dict[str, object] = {"size_bytes": index.size_bytes, "total_lines": index.line_count,
                                "first_line": span[0] if span else None,
                                "last_line": span[1] if span else None}
    return "\n".join(rows) + "\n", facts


def _source(sid: str) -> tuple[str, str]:
    """(session hash, name) of a source id in its exact canonical form (anything else: the full path)."""
    import re

    parts = sid.split(":")
    if len(parts) != 4 or parts[0] != "artifact" or not (
            len(parts[1]) == 32 and set(parts[1]) <= _HEX and len(parts[3]) == 16 and set(parts[3]) <= _HEX
            and re.fullmatch(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}-[a-z0-9_-]{1,24}", parts[2])):
        raise _Unsure
    return parts[1], parts[2]


def _store_objects(root: str) -> str:
    """``root/objects`` of an existing store whose three directories are real ones (as it opens)."""
    import stat

    if not os.path.isdir(root):
        raise _Unsure
    for sub in ("objects", "tmp", "locks"):
        if not stat.S_ISDIR(os.lstat(f"{root}/{sub}").st_mode):
            raise _Unsure  # a symlink, or missing (the full path makes it, or refuses)
    return f"{root}/objects"


def _open(objects: str, key: str) -> Any:
    """The object file of ``key``, every directory on the way a real one, never through a link."""
    import stat

    current = objects
    for part in key.split("/")[:-1]:
        current = f"{current}/{part}"
        if not stat.S_ISDIR(os.lstat(current).st_mode):
            raise _Unsure
    fd = os.open(f"{objects}/{key}", os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Unsure
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _loads(raw: bytes) -> Any:
    """JSON as orjson reads it, or _Unsure: UTF-8 only, and nothing two parsers might read apart
    (an escape, a float, an integer past 64 bits, NaN, a repeated key)."""
    import json

    text = raw.decode("utf-8")
    if "\\u" in text:
        raise _Unsure

    def refuse(_: str) -> Any:
        raise _Unsure

    def integer(digits: str) -> int:
        if len(digits) > 18:
            raise _Unsure
        return int(digits)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            raise _Unsure
        return out

    return json.loads(text, parse_float=refuse, parse_int=integer, parse_constant=refuse,
                      object_pairs_hook=unique)


def _trailer(raw: bytes, room: int) -> dict[str, Any]:
    """The local store's trailer, checked as it checks it (stricter on types)."""
    trailer = _loads(raw)
    if type(trailer) is not dict or any(type(trailer.get(f)) is not kind for f, kind in _TRAILER.items()):
        raise _Unsure
    if not (trailer.get("sha256") is None or type(trailer["sha256"]) is str) or trailer["size"] > room:
        raise _Unsure
    if any(type(k) is not str or type(v) is not str for k, v in trailer["metadata"].items()):
        raise _Unsure
    from s3spill.artifacts.index_fields import parse_iso

    parse_iso(trailer["last_modified"])  # a ValueError where the store's check raises one
    return trailer


def _trailer_at_end(fh: Any) -> dict[str, Any]:
    """The trailer of an open object file (as ``local_trailer.read_from``)."""
    fh.seek(0, os.SEEK_END)
    end = fh.tell()
    if end < _TAIL:
        raise _Unsure
    fh.seek(end - _TAIL)
    tail = fh.read(_TAIL)
    length = int.from_bytes(tail[:8], "big")
    if tail[8:] != _MAGIC or length > end - _TAIL:
        raise _Unsure
    fh.seek(end - _TAIL - length)
    return _trailer(fh.read(length), end - _TAIL - length)


def _whole_object(objects: str, key: str) -> bytes:
    """A small object's body, its trailer and SHA-256 checked (as ``LocalStore.get``)."""
    import hashlib

    with _open(objects, key) as fh:
        data: bytes = fh.read(_SMALL + 1)
    if len(data) > _SMALL or len(data) < _TAIL:
        raise _Unsure
    length = int.from_bytes(data[-_TAIL:-8], "big")
    if data[-8:] != _MAGIC or length > len(data) - _TAIL:
        raise _Unsure
    start = len(data) - _TAIL - length
    trailer = _trailer(data[start:-_TAIL], start)
    body = data[:trailer["size"]]
    if len(body) != trailer["size"] or trailer["sha256"] is None or (
            hashlib.sha256(body).hexdigest() != trailer["sha256"]):
        raise _Unsure
    return body


class _Index:
    """What a page needs of a checked index (:class:`~s3spill.artifacts.pagefill.PageIndex`)."""

    def __init__(self, v: dict[str, Any]) -> None:
        self.line_count: int = v["line_count"]
        self.size_bytes: int = v["size_bytes"]
        self.chunk_size: int = v["chunk_size"]
        self.chunk_count = len(v["chunk_sha256"])
        self.chunk_carry: tuple[int, ...] = v["chunk_carry"]
        self.chunk_lastline_units: tuple[int, ...] = v["chunk_lastline_units"]
        self.chunk_sha256: tuple[str, ...] = v["chunk_sha256"]
        self.chunk_newlines: tuple[int, ...] = v["chunk_newlines"]
        self.codec: str = v["codec"]
        self.newlines_before = _sums(v["chunk_newlines"])
        self.units_before = _sums(v["chunk_units"])
        self.stored_before = _sums(v["chunk_stored"])


def _sums(values: tuple[int, ...]) -> tuple[int, ...]:
    out = [0]
    for value in values:
        out.append(out[-1] + value)
    return tuple(out)


def _index(raw: bytes, body: dict[str, Any], shash: str, name: str, sid: str) -> _Index:
    """The index, checked as the reader checks it against its body's trailer (a HEAD)."""
    from s3spill.artifacts.index_fields import FIELDS, check_consistent, check_names, check_values

    meta = body["metadata"]
    if meta.get("s3spill-index-sha256") or meta.get("s3spill-commit") != "sidecar":
        raise _Unsure  # version 1 (the body pins its index), or no commit marker
    data = _loads(raw)
    if type(data) is not dict:
        raise _Unsure
    check_names(data)
    values = check_values({field: data.get(field, default) for field, default in FIELDS.items()})
    check_consistent(values)
    if (values["schema_version"] < 2 or values["body_etag"] != body["etag"]
            or sum(values["chunk_stored"]) != body["size"] or values["session_hash"] != shash
            or values["name"] != name or not values["sha256"].startswith(sid.rsplit(":", 1)[1])
            or values["output_kind"] == "binary"):
        raise _Unsure
    return _Index(values)


def _fetcher(index: _Index, fh: Any, trailer: dict[str, Any], sid: str, *,
             masked: bool) -> Callable[[int], bytes]:
    """``fetch(k)`` for the page: chunk ``k`` verified, and, ``masked``, only if masking it in
    its context (the reader's view: :data:`~s3spill.artifacts.views.CONTEXT_BYTES` of stored
    text on each side) cannot change it."""
    from s3spill.artifacts.chunks import check_chunk, decompress_frame

    raw: dict[int, bytes] = {}
    size = trailer["size"]

    def chunk(k: int) -> bytes:
        if k not in raw:
            start, end = index.stored_before[k], min(index.stored_before[k + 1], size)
            fh.seek(start)
            frame: bytes = fh.read(end - start)
            if len(frame) != end - start:
                raise _Unsure  # a truncated object
            first = k * index.chunk_size
            span = (first, min(first + index.chunk_size, index.size_bytes))
            if index.codec == "zstd":
                frame = decompress_frame(frame, span, k, sid)
            raw[k] = check_chunk(frame, k, span, index.chunk_sha256[k], index.chunk_newlines[k], sid)
        return raw[k]

    if not masked:
        return chunk
    from s3spill.artifacts.views import CONTEXT_BYTES
    from s3spill.context.secrets.triggers import may_hold_secret

    def shown(k: int) -> bytes:
        data = chunk(k)
        before, j = b"", k
        while j > 0 and len(before) < CONTEXT_BYTES:
            j -= 1
            before = chunk(j)[-CONTEXT_BYTES:] + before
        after, j = b"", k
        while j + 1 < index.chunk_count and len(after) < CONTEXT_BYTES:
            j += 1
            after += chunk(j)[:CONTEXT_BYTES]
        before, after = before[-CONTEXT_BYTES:], after[:CONTEXT_BYTES]
        if data and may_hold_secret(before + data + after if before or after else data):
            raise _Unsure  # masking may change it: the full path masks
        return data

    return shown
