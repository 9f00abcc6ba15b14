"""``s3spill read`` and ``grep`` of a local artifact, answered before argparse and the store layer load.

Why a path of its own: a model's every page read or search is a process of its own, and the
full CLI (argparse, the store layer's dataclasses, orjson, the usage recorder) cost 2-3x a
plain Python program that opens the file, checks its SHA-256 and splits its lines (issue
35). This module imports the standard library's ``os``, ``sys`` and ``stat`` (JSON and
SHA-256 from their C halves, :mod:`s3spill.stdlib_light`), and of the package only what the
answer needs: the page algorithm
(:mod:`s3spill.artifacts.pagefill`) or the grep engine (:mod:`s3spill.artifacts.grep`, its
text rendered without the result's dataclasses: :func:`~s3spill.artifacts.grep.engine.grep_text`),
the index checks (:mod:`s3spill.artifacts.index_fields`), the
chunk checks (:mod:`s3spill.artifacts.chunks`), the secret triggers, and the usage writer
(:mod:`.usage_fast`).

It answers only when it is sure to print what the full path prints, and otherwise returns
None and the full CLI runs as if this module did not exist (nothing was printed, nothing
written). It answers:

* a plain ``[--store PATH] [--session ID] read SOURCE_ID [--offset N] [--limit N]
  [--char-offset N] [--max-chars N] [--show-secrets]`` or ``grep SOURCE_ID PATTERN
  [--max-matches N] [--context N] [-i] [--show-secrets]``, globals before or after; no other
  flag, no abbreviation, no repeat, each value as argparse would accept it; no ``S3SPILL_``
  variable but the store, the session and ``S3SPILL_USAGE``, and no fleet policy file;
* a local store given by an absolute path or a plain ``file://`` URL, a session named by
  flag, variable or harness;
* a version 2 artifact of that session whose body and index pass every check the full
  path makes, that is not binary (the hexdump; grep refuses it), not a CSV/TSV grep (record
  numbers), and — masked, as reads are by default — whose chunks no secret trigger matches
  in their context (``may_hold_secret`` of the same window the reader's view masks):
  masking would change nothing, so what is shown is the stored text. A window a trigger
  may match goes to the full path, which masks it.

Every check is made as the full path makes it or stricter (its JSON parser refuses what
orjson might read differently: escapes, floats, huge integers, repeated keys); any error
at all before the answer is printed means the full path runs and says what is wrong in its
own words (a grep that outran its time budget therefore runs again there, to the same
refusal). A page is rendered by the same functions as :class:`~s3spill.artifacts.paging.Page`,
a grep is the library's own engine and rendering; the usage event is the same
(:mod:`.usage_fast`, after the answer is out).
"""

from __future__ import annotations

import os
import sys

from s3spill.cli.fast_artifact import Unsure, chunk_reader, open_artifact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

    from s3spill.cli.fast_artifact import Index

__all__ = ["fast_read"]

#: ``S3SPILL_`` variables that set no flag of ``read`` (or one this path reads itself).
_QUIET_VARIABLES = frozenset({"S3SPILL_STORE", "S3SPILL_SESSION", "S3SPILL_USAGE"})
#: Each command's number flags and the least value each takes (``count``: 0, ``positive``: 1).
_NUMBERS = {"read": {"--offset": 0, "--limit": 1, "--char-offset": 0, "--max-chars": 1},
            "grep": {"--max-matches": 0, "--context": 0}}
#: Each command's switches (``-i`` and ``--ignore-case`` are one flag).
_SWITCHES = {"read": frozenset({"--show-secrets"}),
             "grep": frozenset({"--show-secrets", "-i", "--ignore-case"})}
_GLOBALS = ("--store", "--session")
#: ``S3SPILL_USAGE`` values that turn usage records off (as ``usage_recorder`` reads them).
_USAGE_OFF = ("off", "0", "false", "no")
_HARNESS_SESSION_VARIABLES = ("CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID")  # argtypes' (a test checks)


def fast_read(argv: Sequence[str]) -> int | None:
    """The exit status of a ``read`` or ``grep`` answered here, or None: the full CLI answers."""
    try:
        call = _parse(argv)
        text, facts = _page(call) if call["command"] == "read" else _grep(call)
    except KeyboardInterrupt:
        raise
    except Exception:  # noqa: BLE001 - any doubt at all: the full path decides, in its words
        return None
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()
    if not call["show_secrets"] and os.environ.get("S3SPILL_USAGE", "on").lower() not in _USAGE_OFF:
        from s3spill.cli.usage_fast import record_read

        record_read(call["root"], call["session"], call["source_id"], call["command"], text, facts)
    return 1 if facts.get("total_matches") == 0 else 0  # grep: 1 when nothing matched


# -- the command line -----------------------------------------------------------------------

def _utf8(value: str) -> str:
    value.encode("utf-8")  # UnicodeEncodeError: argparse's usage error, said by the full path
    return value


def _parse(argv: Sequence[str]) -> dict[str, Any]:
    """The call's settings; Unsure unless ``argv`` and the environment are plain (see the module)."""
    command, seen, positional = _tokens(argv)
    environ = os.environ
    if any(name.startswith("S3SPILL_") and name not in _QUIET_VARIABLES for name in environ):
        raise Unsure
    from s3spill.fleet.locate import store_needs_no_policy

    if not store_needs_no_policy(None, environ):
        raise Unsure
    numbers: dict[str, Any] = {}
    for flag, least in _NUMBERS[command].items():
        given = seen.get(flag)
        if given is not None and not (given.isascii() and given.isdigit() and int(given) >= least):
            raise Unsure
        numbers[flag[2:].replace("-", "_")] = None if given is None else int(given)
    if command == "grep":
        numbers.update(pattern=positional[1], ignore_case="-i" in seen or "--ignore-case" in seen)
    url = seen.get("--store") or environ.get("S3SPILL_STORE") or ""
    return {"command": command, "source_id": positional[0], "store": url, "root": _local_root(_utf8(url)),
            "session": _session(seen.get("--session")),
            "show_secrets": "--show-secrets" in seen, **numbers}


def _tokens(argv: Sequence[str]) -> tuple[str, dict[str, str], list[str]]:
    """The command, the flags given (each once) and the positionals of
    ``[globals] read ID [flags]`` or ``[globals] grep ID PATTERN [flags]``."""
    seen: dict[str, str] = {}
    positional: list[str] = []
    command = ""
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        i += 1
        if not arg.startswith("-"):
            if not command and arg not in _NUMBERS:
                raise Unsure  # another command, or a positional before it
            if command:
                positional.append(_utf8(arg))
            command = command or arg
            continue
        name, eq, value = arg.partition("=")
        switch = bool(command) and name in _SWITCHES[command]
        known = name in _GLOBALS or switch or (bool(command) and name in _NUMBERS[command])
        if name in seen or not known or (switch and eq):
            raise Unsure
        if switch:
            seen[name] = ""
            continue
        if not eq:
            if i == len(tokens):
                raise Unsure
            value = tokens[i]
            i += 1
        if not value or value.startswith("-"):
            raise Unsure
        seen[name] = _utf8(value)
    if not command or len(positional) != (1 if command == "read" else 2):
        raise Unsure
    return command, seen, positional


def _local_root(url: str) -> str:
    """The directory of a local store URL as ``LocalStore.from_url`` finds it: an absolute path,
    or ``file://`` (or ``file://localhost``) and one, with nothing to unquote or split off."""
    path = url
    for scheme in ("file://localhost/", "file:///"):
        if url.startswith(scheme):
            path = url[len(scheme) - 1:]
    if not path.startswith("/") or any(c in path for c in "%?#;"):
        raise Unsure  # S3, the default store, a relative path, or a URL with more in it
    return path


def _session(flag: str | None) -> str:
    """``--session``, ``$S3SPILL_SESSION`` or the harness's (the directory's default: the full path)."""
    found = flag or os.environ.get("S3SPILL_SESSION") or next(
        (os.environ[n] for n in _HARNESS_SESSION_VARIABLES if os.environ.get(n)), None)
    if not found:
        raise Unsure
    return _utf8(found)


# -- the page -------------------------------------------------------------------------------

def _page(call: dict[str, Any]) -> tuple[str, dict[str, object]]:
    """The page's text and its usage facts, every byte checked; Unsure (or any error) if not sure."""
    from s3spill.artifacts import pagefill
    from s3spill.context.read_limits import DEFAULT_LIMIT, DEFAULT_MAX_CHARS

    sid = call["source_id"]
    body, trailer, index = open_artifact(call["root"], call["session"], sid)
    where = {"offset": call["offset"] or 0, "char_offset": call["char_offset"] or 0,
             "limit": DEFAULT_LIMIT if call["limit"] is None else call["limit"],
             "max_chars": DEFAULT_MAX_CHARS if call["max_chars"] is None else call["max_chars"]}
    with body:
        chunk = _cached(chunk_reader(index, body, trailer, sid))
        masked = not call["show_secrets"]
        filled = pagefill.fill(index, chunk, sid, **where) if not masked or not where["char_offset"] else None
        if masked and filled is not None and not _page_unmasked(index, chunk, filled[3], filled[4]):
            filled = None
        if filled is None:  # the chunks' windows, each unchanged by masking, or Unsure
            filled = pagefill.fill(index, _masked_chunks(index, chunk), sid, **where)
        lines, eof, nxt, _, _ = filled
    span = (lines[0][0], lines[-1][0]) if lines else None
    rows = [pagefill.header(sid, span, index.line_count, call["char_offset"] or 0, index.size_bytes)]
    rows += pagefill.rows(lines)
    if any(line[3] for line in lines):
        rows.append(pagefill.LEGEND)
    rows.append(pagefill.footer("cli", eof=eof, last_newline=lines[-1][5] if lines else None,
                                total_lines=index.line_count, next_offset=None if nxt is None else nxt[0],
                                next_char_offset=None if nxt is None else nxt[1]))
    facts: dict[str, object] = {"size_bytes": index.size_bytes, "total_lines": index.line_count,
                                "first_line": span[0] if span else None,
                                "last_line": span[1] if span else None}
    rows.append("")  # the text's last newline, without a copy of the whole page to add it (~0.3 ms)
    return "\n".join(rows), facts


def _unchanged_by_masking(data: bytes, before: bytes = b"", after: bytes = b"", *, headless: bool = False,
                          cut_end: bool = False) -> bytes:
    """The reader's view (:func:`~s3spill.context.secrets.masking.mask_view`) of ``data`` when no
    secret trigger matches its window, so masking would return it as it is; Unsure otherwise."""
    from s3spill.context.secrets.triggers import may_hold_secret

    if data and may_hold_secret(before + data + after if before or after else data):
        raise Unsure  # masking may change it: the full path masks
    return data


def _cached(read: Callable[[int], bytes]) -> Callable[[int], bytes]:
    """``read`` (chunk ``k``, verified) with each chunk read once."""
    raw: dict[int, bytes] = {}

    def chunk(k: int) -> bytes:
        if k not in raw:
            raw[k] = read(k)
        return raw[k]

    return chunk


def _masked_chunks(index: Index, chunk: Callable[[int], bytes]) -> Callable[[int], bytes]:
    """``fetch(k)``: chunk ``k`` as the reader's view shows it (masked in its context), which is
    the stored chunk when no trigger matches its window; Unsure otherwise."""

    def shown(k: int) -> bytes:
        from s3spill.artifacts.views import around

        return _unchanged_by_masking(chunk(k), *around(index.chunk_count, chunk, k))

    return shown


def _page_unmasked(index: Index, chunk: Callable[[int], bytes], start: int, covered: int) -> bool:
    """Does the reader's view show the bytes a page filled from stored chunks used as they are?
    (:func:`~s3spill.artifacts.views.page_as_stored` asking the mask's
    :func:`~s3spill.context.secrets.triggers.lines_kept`, as ``ArtifactReader.read_page`` does:
    only the page's lines and the next one are searched for a trigger, the chunk's window for a
    private-key marker.)"""
    from s3spill.artifacts.views import page_as_stored
    from s3spill.context.secrets.triggers import lines_kept

    return page_as_stored(index, chunk, start, covered, lines_kept)


# -- grep -----------------------------------------------------------------------------------

def _grep(call: dict[str, Any]) -> tuple[str, dict[str, object]]:
    """The grep's text and its usage facts, as ``ArtifactReader.grep`` finds them (every chunk
    verified, then the full SHA-256); Unsure (or any error) if not sure."""
    from s3spill.artifacts.grep.engine import grep_text
    from s3spill.artifacts.grep.pattern import compile_pattern
    from s3spill.context.read_limits import DEFAULT_MAX_MATCHES

    compiled = compile_pattern(call["pattern"], ignore_case=call["ignore_case"])
    sid = call["source_id"]
    body, trailer, index = open_artifact(call["root"], call["session"], sid)
    with body:
        if index.chunk_records:
            raise Unsure  # CSV/TSV: each match's record number (the full path)
        chunks = _verified(index, chunk_reader(index, body, trailer, sid))
        if not call["show_secrets"]:
            from s3spill.artifacts.views import viewed

            chunks = (data for _, data in viewed(((None, c) for c in chunks), _unchanged_by_masking))
        text, total = grep_text(chunks, sid, compiled, style="cli", context=call["context"] or 0,
                                max_matches=DEFAULT_MAX_MATCHES if call["max_matches"] is None
                                else call["max_matches"], expected_lines=index.line_count)
    return text, {"total_matches": total}


def _verified(index: Index, read: Callable[[int], bytes]) -> Iterator[bytes]:
    """Every chunk in order, each verified; Unsure at the end unless the full SHA-256 matches
    (as ``ArtifactReader._iter_verified``: nothing is printed before it is checked). A one-chunk
    artifact's text is its chunk, whose SHA-256 the chunk's check computed: it is not hashed twice."""
    from s3spill.stdlib_light import sha256

    if index.chunk_count == 1:  # the one chunk is the whole text, and its SHA-256 was checked
        yield read(0)
        if index.chunk_sha256[0] != index.sha256:
            raise Unsure
        return
    full = sha256()
    for k in range(index.chunk_count):
        data = read(k)
        full.update(data)
        yield data
    if full.hexdigest() != index.sha256:
        raise Unsure
