"""The hook's "nothing to do", answered before argparse, pydantic, boto3 or the store load.

Why a path of its own: a harness runs ``s3spill hook`` after every tool call, and nearly
every call is a small result that needs nothing. The full CLI (argparse with every flag,
the store layer, pydantic models, the Spiller) costs 5-8x the interpreter's own start;
this module imports only ``os`` and ``sys`` and decides from the payload's size and
shape whether any work can exist (:func:`needs_work`). When it cannot, the process exits
0 printing nothing — exactly what the full path answers for such a payload. Anything it
does not recognise (``--help``, an unknown flag, a value the full parser would refuse)
goes to the full CLI, so errors and help read the same as always.

What the full path then reads: the bytes already taken from stdin are kept in
:data:`PAYLOAD_PREFIX` and :func:`payload` returns them followed by the rest of stdin,
so not one byte of the payload is lost or read twice.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not from typing, nor collections.abc (the collections package) at run time
if TYPE_CHECKING:
    from collections.abc import Sequence

#: Payloads up to this many bytes cannot hold anything over the hooks' thresholds (the
#: smallest of them, the 25,000-token budget; tests/test_hooks.py checks it against
#: :func:`s3spill.adapters.harness_hooks.floor_bytes`).
HOOK_FLOOR_BYTES = 25_000
#: Byte strings that make even a small payload work: a result the harness saved to a
#: file (Claude Code's ``persistedOutputPath``; an MCP result replaced by "Output has been
#: saved to ..."), and the events whose answer depends on the tool's input, not on its
#: output's size (a shell command to wrap before it runs, a failed call's excerpt).
#: Extending this tuple only sends more payloads to the full path; it never drops work.
WORK_MARKERS: tuple[bytes, ...] = (b"persistedOutputPath", b"saved to", b"PreToolUse",
                                   b"BeforeTool", b"PostToolUseFailure")
HARNESSES = frozenset({"claude-code", "gemini-cli", "codex", "opencode"})
_GLOBAL_VALUES = frozenset({"--store", "--session", "--log-level"})
_LOG_LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})
_SERVER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")

#: What :func:`hook_pass_through` read of stdin before handing over to the full path.
PAYLOAD_PREFIX: bytes | None = None


def needs_work(head: bytes, complete: bool) -> bool:
    """Can the payload whose first bytes are ``head`` need an answer? False only when certain.

    ``complete`` says ``head`` is the whole payload. A payload over the floor may hold a
    string over a threshold; one under it may still name a saved file or be an event
    whose answer does not depend on size (:data:`WORK_MARKERS`).
    """
    if not complete or len(head) > HOOK_FLOOR_BYTES:
        return True
    return any(marker in head for marker in WORK_MARKERS)


def _valid_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _valid(option: str, value: str) -> bool:
    """Would the full parser accept ``value`` for ``option``? (It is the judge when not.)"""
    if option == "--log-level":
        return value.upper() in _LOG_LEVELS
    if option == "--server":
        return 1 <= len(value) <= 24 and set(value) <= _SERVER_CHARS
    return _valid_text(value)


def _hook_argv(argv: Sequence[str]) -> bool:
    """Is ``argv`` a plain ``[globals] hook HARNESS [--server NAME] [globals]``?"""
    tokens = list(argv)
    seen_hook = harness = False
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        option, eq, inline = arg.partition("=")
        values = _GLOBAL_VALUES | ({"--server"} if harness else set())
        if option in values:
            if eq:
                value = inline
            elif i + 1 < len(tokens):
                i += 1
                value = tokens[i]
            else:
                return False
            if not _valid(option, value):
                return False
        elif arg == "--debug":
            pass
        elif arg == "hook" and not seen_hook:
            seen_hook = True
        elif seen_hook and not harness and arg in HARNESSES:
            harness = True
        else:
            return False
        i += 1
    return harness


def _environment_valid() -> bool:
    """The variables that set the hook's flags hold what the full parser would accept."""
    for name, option in (("S3SPILL_LOG_LEVEL", "--log-level"), ("S3SPILL_SERVER", "--server"),
                         ("S3SPILL_STORE", "--store"), ("S3SPILL_SESSION", "--session")):
        value = os.environ.get(name)
        if value is not None and not _valid(option, value):
            return False
    return True


def _policy_keeps_floor() -> bool:
    """No fleet policy sets a limit under the floor (s3spill.fleet.locate, stdlib only)."""
    from s3spill.fleet.locate import policy_floor

    floor = policy_floor()
    return floor is None or floor > HOOK_FLOOR_BYTES


def hook_pass_through(argv: Sequence[str]) -> bool:
    """True when this ``s3spill hook`` call needs nothing: the caller exits 0, printing nothing.

    False when the full CLI must decide; what was read of stdin is then in
    :data:`PAYLOAD_PREFIX` for :func:`payload`.
    """
    global PAYLOAD_PREFIX
    PAYLOAD_PREFIX = None
    if not _hook_argv(argv) or not _environment_valid() or not _policy_keeps_floor():
        return False
    stdin = sys.stdin.buffer
    head = bytearray()
    complete = False
    while len(head) <= HOOK_FLOOR_BYTES:
        piece = stdin.read(HOOK_FLOOR_BYTES + 1 - len(head))
        if not piece:
            complete = True
            break
        head += piece
    if not needs_work(bytes(head), complete):
        return True
    PAYLOAD_PREFIX = bytes(head)
    return False


def payload_prefix() -> bytes:
    """What :func:`hook_pass_through` read of stdin (once; b"" when it read nothing)."""
    global PAYLOAD_PREFIX
    prefix, PAYLOAD_PREFIX = PAYLOAD_PREFIX or b"", None
    return prefix


def payload() -> bytes:
    """The hook's whole payload: what the fast path read, then the rest of stdin."""
    global PAYLOAD_PREFIX
    prefix, PAYLOAD_PREFIX = PAYLOAD_PREFIX or b"", None
    return prefix + sys.stdin.buffer.read()
