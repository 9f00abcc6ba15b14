"""``s3spill run -- CMD`` of a small output at the interpreter's own cost: start first, decide later.

Why: a harness may wrap every shell command through ``s3spill run`` (the route that
catches a failing command's full output), and almost every command prints a few lines.
The full path (argparse with every sub-command's flags, pydantic policies, the store,
the Spiller, the secret detector) costs ~15x the interpreter's start; so this module,
on the stdlib and :mod:`.run_pipe` only, starts the command at once and reads its merged
output. When the command has ended with an output the Spiller would certainly print
unchanged — at most :data:`FAST_INLINE_BYTES`, valid UTF-8 with no control byte that
would make it binary, and no byte a secret rule could flag
(:func:`s3spill.context.secrets.triggers.may_hold_secret`) — it prints it and exits with
the command's status. Otherwise the same process, pipe and bytes go on to the full path
(:func:`s3spill.cli.run_cmds.continue_run`), so not one byte is lost or read twice.

The fast path takes only the plain form (``[globals] run [--tool bash] [--call-id ID]
[--pointer-style cli|tools] [--] CMD ...``) with flags and variables the full parser
would accept; anything else (``--json``, ``--background``, an abbreviation, a value
argparse would refuse) is the full path from the start, before the command runs.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not imported from typing: the fast paths skip that import
if TYPE_CHECKING:  # nor collections.abc, whose package imports heapq, keyword, operator, reprlib
    from collections.abc import Iterator, Sequence

    from s3spill.cli.run_pipe import Pipe, Process

#: The shell policy's threshold is 30,000 characters; a character is at least one byte,
#: so an output of at most this many bytes is under it (tests check it against SpillPolicy).
FAST_INLINE_BYTES = 30_000
#: What the Spiller's detection counts as control bytes (a binary output is a hexdump):
#: C0 and DEL except backspace, tab, LF, VT, FF, CR, ESC (tests check it against detect).
CONTROL_BYTES = bytes(b for b in [*range(0x20), 0x7F] if b not in b"\x08\t\n\x0b\x0c\r\x1b")
_KEEP_CONTROLS = bytes(b for b in range(256) if b not in CONTROL_BYTES)
#: ``S3SPILL_*`` variables that set a flag of ``run`` (tests check it against the parser);
#: a set one the fast path does not check sends the call to the full parser.
RUN_SETTINGS = frozenset({"S3SPILL_STORE", "S3SPILL_SESSION", "S3SPILL_DEBUG", "S3SPILL_LOG_LEVEL",
                          "S3SPILL_TOOL", "S3SPILL_JSON", "S3SPILL_POINTER_STYLE",
                          "S3SPILL_SEGMENT_INTERVAL", "S3SPILL_SEGMENT_BYTES",
                          "S3SPILL_HEARTBEAT_INTERVAL", "S3SPILL_MAX_BYTES", "S3SPILL_CONFIG",
                          "S3SPILL_MAX_STORED_BYTES", "S3SPILL_FOLLOW", "S3SPILL_WATCH_PID",
                          "S3SPILL_HARNESS", "S3SPILL_SERVER"})
_CHECKED = {"S3SPILL_STORE": "--store", "S3SPILL_SESSION": "--session",
            "S3SPILL_LOG_LEVEL": "--log-level", "S3SPILL_TOOL": "--tool",
            "S3SPILL_POINTER_STYLE": "--pointer-style", "S3SPILL_CONFIG": "--config"}
_VALUES = frozenset({"--store", "--session", "--log-level"})
_RUN_VALUES = frozenset({"--tool", "--call-id", "--pointer-style"})
_LOG_LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})


class Started:
    """A command the fast path started and could not finish: the full path takes it on.

    (A plain class: ``dataclasses`` imports ``inspect``, a few ms this path does not have.)
    """

    def __init__(self, proc: Process, pipe: Pipe, read: bytes,
                 rest: Iterator[bytes]) -> None:
        self.proc = proc
        self.pipe = pipe
        self.read = read
        self.rest = rest


def _store_ok(url: str | None) -> bool:
    """Would ``open_store`` accept this URL's form (so opening it later is no usage error)?"""
    if url is None:
        return True
    if url.startswith("s3://"):
        netloc = url[5:].split("/", 1)[0]
        return bool(netloc) and "?" not in url and "#" not in url
    return url.startswith(("file://", "/"))


def _valid(option: str, value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    if option == "--log-level":
        return value.upper() in _LOG_LEVELS
    if option == "--tool":
        return value == "bash"
    if option == "--pointer-style":
        return value in ("cli", "tools")
    if option == "--store":
        return _store_ok(value)
    return True


def _flag_value(tokens: Sequence[str], i: int, options: frozenset[str]) -> tuple[int, str, str] | None:
    """(next index, option, value) when ``tokens[i]`` is one of ``options`` with its value."""
    option, eq, inline = tokens[i].partition("=")
    if option not in options:
        return None
    if eq:
        return i + 1, option, inline
    if i + 1 >= len(tokens):
        return None
    return i + 2, option, tokens[i + 1]


def _command(argv: Sequence[str]) -> tuple[list[str], dict[str, str]] | None:
    """The command and the flags of a plain ``run`` call; None for anything else."""
    tokens = list(argv)
    flags: dict[str, str] = {}
    seen_run = False
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        got = _flag_value(tokens, i, _VALUES | (_RUN_VALUES if seen_run else frozenset()))
        if got is not None:
            i, option, value = got
            if not _valid(option, value):
                return None
            flags[option] = value
            continue
        if arg == "--debug":
            i += 1
        elif arg == "run" and not seen_run:
            seen_run = True
            i += 1
        elif seen_run and (arg == "--" or not arg.startswith("-")):
            cmd = tokens[i + 1:] if arg == "--" else tokens[i:]
            return (cmd, flags) if cmd else None
        else:
            return None
    return None


def _environment_ok() -> bool:
    for name, value in os.environ.items():
        if not name.startswith("S3SPILL_") or name not in RUN_SETTINGS:
            continue
        if name == "S3SPILL_JSON":
            if value.strip().lower() in {"1", "true", "yes", "on"}:
                return False
        elif name == "S3SPILL_DEBUG":
            continue
        elif name not in _CHECKED or not _valid(_CHECKED[name], value):
            return False
    return True


def inline_as_is(data: bytes) -> bool:
    """Would the Spiller print ``data`` (a whole output) exactly as it is? False when not certain."""
    if len(data) > FAST_INLINE_BYTES or data.startswith(b"\xef\xbb\xbf"):
        return False
    if data.translate(None, _KEEP_CONTROLS):  # a control byte: maybe binary, the full path decides
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if not data:
        return True
    from s3spill.context.secrets.anchors import no_anchor

    if no_anchor(data):  # no trigger can match: RE2 and the patterns are not even loaded
        return True
    from s3spill.context.secrets.triggers import may_hold_secret

    return not may_hold_secret(data)


def _policy_keeps_floor() -> bool:
    """No fleet policy sets a threshold, hard cap or token budget under what this path prints."""
    from s3spill.fleet.locate import policy_floor

    floor = policy_floor()
    return floor is None or floor >= FAST_INLINE_BYTES


def fast_run(argv: Sequence[str]) -> int | Started | None:
    """The exit status when this ``run`` is done; a :class:`Started` command to hand on; None: not ours."""
    parsed = _command(argv)
    if parsed is None or not _environment_ok() or not _policy_keeps_floor():
        return None
    cmd, _flags = parsed
    from s3spill.cli.run_pipe import HELD_OPEN_NOTE, Pipe, exit_status, start

    proc = start(cmd)
    if isinstance(proc, int):
        return proc
    assert proc.stdout is not None
    pipe = Pipe(proc.stdout.fileno(), proc)
    chunks = iter(pipe)
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        if len(buffer) > FAST_INLINE_BYTES:
            return Started(proc, pipe, bytes(buffer), chunks)
    data = bytes(buffer)
    if not inline_as_is(data):
        return Started(proc, pipe, data, iter(()))
    proc.stdout.close()
    returncode = proc.wait()
    text = data.decode("utf-8")
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()
    if pipe.held_open:
        from s3spill.cli.voice import say

        print(say(f"run: {HELD_OPEN_NOTE}"), file=sys.stderr)
    return exit_status(returncode)
