"""``spill``, ``read`` and ``grep``: store a tool output, page through it, search it.

The session comes from ``--session`` / ``$S3SPILL_SESSION`` (the harness), never from the
source id. Output is written only after the library has verified every byte it prints, so
an integrity failure prints nothing to stdout: just one line on stderr and exit status 5.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from s3spill import keys
from s3spill.cli.argtypes import count, positive, session_from_args, store_from_args, utf8
from s3spill.cli.exitcodes import ExitCode
from s3spill.cli.policy_args import add_cap_flag
from s3spill.cli.voice import say
from s3spill.context.read_limits import (
    DEFAULT_BYTES,
    DEFAULT_LIMIT,
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_MATCHES,
    MAX_BYTES,
)
from s3spill.errors import ArtifactNotFound, InvalidRequest, S3SpillError
from s3spill.log import get_logger

if TYPE_CHECKING:  # the artifact layer loads when a command reads, not when flags are parsed
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.live.reader import LiveReader

log = get_logger("s3spill.cli.artifacts")


def _out(text: str) -> None:
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()


def _artifacts(args: argparse.Namespace) -> tuple[ArtifactStore, str]:
    """The session's artifacts; pages and matches masked (the pointer sends a model here)
    unless the operator passed ``--show-secrets``."""
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.context.secrets.masking import mask_view

    session = session_from_args(args)
    view = None if getattr(args, "show_secrets", True) else mask_view
    return ArtifactStore(store_from_args(args, create=False), session_id=session, view=view), session


def add_show_secrets(p: argparse.ArgumentParser) -> None:
    """The operator's flag to print the stored bytes, secrets included."""
    p.add_argument("--show-secrets", action="store_true",
                   help="print the stored text as it is, credentials included (by default they are"
                        " masked, as for the model: a pointer tells the model to run this command)")


def cmd_spill(args: argparse.Namespace) -> int:
    """Through the Spiller, like every other entry point: the fleet policy's cap, quota and
    secrets mode apply to a CLI spill as to a hook's or the proxy's."""
    from s3spill.cli.policy_args import policy_from_args
    from s3spill.spill.spiller import Spiller

    session = session_from_args(args)
    loaded = policy_from_args(args)
    with store_from_args(args) as store, Spiller.from_config(session, store, policy=loaded,
                                                             harness="spill") as spiller, _quiet():
        if args.file in (None, "-"):
            result = spiller.externalize(_chunks(sys.stdin.buffer), args.tool, args.call_id,
                                         label=args.label, force=True)
        else:
            with _input(args.file) as fh:
                result = spiller.externalize(_chunks(fh), args.tool, args.call_id, label=args.label,
                                             force=True)
        ref = result.artifact
        if ref is not None:
            _mark_active(spiller.artifacts, session)
    if ref is None:
        if spiller.sink.last_error is not None:
            raise spiller.sink.last_error  # the error boundary says what failed, in one line
        print(say(f"spill: {result.degraded_reason or 'not saved'}", "nothing was stored"), file=sys.stderr)
        return int(ExitCode.ERROR)
    if args.json:
        _out(ref.model_dump_json() + "\n")
    else:
        capped = (f"stored {result.stored_bytes:,} of {result.total_bytes:,} bytes (capped: head, a "
                  "marker line, tail)\n" if result.stored_bytes is not None else "")
        _out(f"{ref.source_id}\n{ref.summary}\nsha256 {ref.sha256}\n{capped}")
    return 0


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The Spiller's own warning about a spill it could not store: the CLI says it itself."""
    import logging

    logger = logging.getLogger("s3spill.spill.spiller")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _chunks(fh: BinaryIO) -> Iterator[bytes]:
    while piece := fh.read(1024 * 1024):
        yield piece


def _input(path: str) -> BinaryIO:
    """FILE opened for reading; a path that is no readable file is a usage error naming it."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - returned to the caller's with
        if os.path.isdir(path):  # Linux opens a directory for reading; the read would fail
            fh.close()
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    except OSError as exc:
        raise InvalidRequest(f"cannot read {path}: {exc.strerror or exc}",
                             hint="pass a readable file, or - for standard input") from None
    return fh


def _mark_active(arts: ArtifactStore, session: str) -> None:
    """A spill is activity: GC keeps every artifact of a session active within its TTL.

    The Spiller does the same after each spill; a CLI spill is the harness's spill, so it
    must protect its fresh artifact the same way before any reference is published. A
    failed mark is a warning, not a failed spill: the artifact is stored either way.
    """
    from s3spill.leases.journal import LeaseJournal

    try:
        LeaseJournal(arts.store, session, arts.config).touch()
    except S3SpillError as exc:
        log.warning("spill.touch_failed", error=type(exc).__name__)


@contextlib.contextmanager
def _journal_says(arts: ArtifactStore, session: str) -> Iterator[None]:
    """A missing artifact is "expired" only if the session's journal records GC deleting it.

    The journal is loaded only on that path: a read that succeeds stays in the artifact layer.
    """
    try:
        yield
    except ArtifactNotFound as exc:
        from s3spill.leases.expiry import explain_missing

        raise explain_missing(arts.store, session, exc, arts.config) from None


def _reader(arts: ArtifactStore, source_id: str) -> ArtifactStore | LiveReader:
    """Who reads ``source_id``: the live reader for a live id (imported only then), else ``arts``."""
    if not keys.is_live_id(source_id):
        return arts
    from s3spill.live.reader import LiveReader

    return LiveReader.over(arts)


def cmd_read(args: argparse.Namespace) -> int:
    arts, session = _artifacts(args)
    with _journal_says(arts, session):
        if args.path is not None:
            doc = arts.read_json(args.source_id, args.path, offset=args.offset, limit=args.limit,
                                 max_chars=args.max_chars)
            _out(doc.model_dump_json() + "\n" if args.json else doc.render("cli"))
            return 0
        if args.record_offset is not None:
            rec = arts.read_records(args.source_id, args.record_offset, limit=args.limit,
                                    max_chars=args.max_chars)
            _out(rec.model_dump_json() + "\n" if args.json else rec.render("cli"))
            return 0
        by_bytes = args.byte_offset is not None or args.bytes is not None
        by_line = keys.is_live_id(args.source_id) or args.since is not None  # a live output
        if by_bytes or (not by_line and arts.index(args.source_id).output_kind == "binary"):
            # A hexdump: plain ASCII, so no byte of the artifact reaches the terminal as a control.
            got = arts.read_bytes(args.source_id, byte_offset=args.byte_offset or 0,
                                  nbytes=args.bytes or DEFAULT_BYTES, max_chars=args.max_chars)
            _out(got.model_dump_json() + "\n" if args.json else got.render("cli"))
            return 0
        page = _reader(arts, args.source_id).read_page(
            args.source_id,
            offset=args.offset,
            limit=args.limit,
            char_offset=args.char_offset,
            max_chars=args.max_chars,
            since=args.since,
        )
    text = page.model_dump_json() + "\n" if args.json else page.render("cli")
    _out(text)
    lines = getattr(page, "lines", ())
    _record_usage(arts, session, args, "read", text, {
        "size_bytes": getattr(page, "size_bytes", None), "total_lines": getattr(page, "total_lines", None),
        "first_line": lines[0].number if lines else None, "last_line": lines[-1].number if lines else None})
    return 0


def _record_usage(arts: ArtifactStore, session: str, args: argparse.Namespace, op: str, text: str,
                  facts: dict[str, object]) -> None:
    """The usage event of a page or grep the CLI printed (a pointer sends a model here), one
    small object, written after the answer is out; fail open. Not for ``--show-secrets``:
    that is an operator's unmasked view, not what a model was shown."""
    if getattr(args, "show_secrets", True):
        return
    from s3spill.cli.answers import record_usage

    record_usage(arts.store, session, args.source_id, op, text, facts)


def cmd_grep(args: argparse.Namespace) -> int:
    arts, session = _artifacts(args)
    with _journal_says(arts, session):
        result = _reader(arts, args.source_id).grep(
            args.source_id,
            args.pattern,
            context=args.context,
            max_matches=args.max_matches,
            ignore_case=args.ignore_case,
        )
    text = result.model_dump_json() + "\n" if args.json else result.render("cli")
    _out(text)
    _record_usage(arts, session, args, "grep", text, {"total_matches": result.total_matches})
    return 0 if result.total_matches else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("spill", help="store a file (or stdin) as an immutable artifact, print its reference")
    p.add_argument("file", nargs="?", metavar="FILE", type=utf8,
                   help="the output to store; '-' or nothing: standard input")
    p.add_argument("--tool", default="stdin", type=utf8,
                   help="tool that produced the output (default: stdin)")
    p.add_argument("--call-id", type=utf8, help="the tool call's id, kept in the reference")
    p.add_argument("--label", type=utf8, help="a short human title, kept in the reference")
    p.add_argument("--json", action="store_true", help="print the full ArtifactReference as JSON")
    add_cap_flag(p)
    p.set_defaults(func=cmd_spill)

    p = sub.add_parser("read", help="print one verified page of an artifact")
    p.add_argument("source_id", metavar="SOURCE_ID", type=utf8)
    p.add_argument("--offset", type=count, default=0, help="lines to skip (0-based; default 0)")
    p.add_argument(
        "--limit", type=positive, default=DEFAULT_LIMIT, help=f"lines (default {DEFAULT_LIMIT})"
    )
    p.add_argument(
        "--char-offset",
        type=count,
        default=0,
        help="continue a long line from this character (as the footer says)",
    )
    p.add_argument(
        "--max-chars",
        type=positive,
        default=DEFAULT_MAX_CHARS,
        help=f"page size in characters, header and footer included (default {DEFAULT_MAX_CHARS})",
    )
    p.add_argument("--byte-offset", type=count, default=None,
                   help="read a hexdump from this byte (the default view of a binary artifact)")
    p.add_argument("--bytes", type=positive, default=None,
                   help=f"bytes of the hexdump (default {DEFAULT_BYTES}, at most {MAX_BYTES})")
    p.add_argument("--path", type=utf8, default=None,
                   help='JSON outputs: show the value at this JSON Pointer (e.g. "/items/0"; "" for'
                   " the whole document), paged by element (--offset/--limit count elements)")
    p.add_argument("--record-offset", type=count, default=None,
                   help="CSV/TSV outputs: page by record from here (records to skip; --limit counts"
                   " records); every page repeats the header")
    p.add_argument("--since", type=count, metavar="BYTES",
                   help="start at the line holding this byte: a live output's footer gives the"
                        " value that shows only what is new")
    p.add_argument("--json", action="store_true", help="print the structured Page as JSON")
    add_show_secrets(p)
    p.set_defaults(func=cmd_read)

    p = sub.add_parser(
        "grep", help="search an artifact with a regular expression (exit 1: no match)"
    )
    p.add_argument("source_id", metavar="SOURCE_ID", type=utf8)
    p.add_argument("pattern", metavar="PATTERN", type=utf8,
                   help="regular expression in RE2 syntax (no backreferences or lookarounds), "
                   "matched per line")
    p.add_argument(
        "--max-matches",
        type=count,
        default=DEFAULT_MAX_MATCHES,
        help=f"matching lines to show (default {DEFAULT_MAX_MATCHES}); the rest are counted",
    )
    p.add_argument("--context", type=count, default=0, help="lines of context around each match")
    p.add_argument("-i", "--ignore-case", action="store_true")
    p.add_argument("--json", action="store_true", help="print the structured result as JSON")
    add_show_secrets(p)
    p.set_defaults(func=cmd_grep)
