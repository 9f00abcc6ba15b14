"""Helpers shared by sub-commands: argument types, and the store and session from flags/env."""

from __future__ import annotations

import argparse
import hashlib
import os

from s3spill.errors import ConfigError
from s3spill.store import ObjectStore


def store_from_args(args: argparse.Namespace) -> ObjectStore:
    """``--store``, else the fleet policy's (``[store] url`` / ``$S3SPILL_STORE``), with its KMS key."""
    from s3spill.cli.policy_args import policy_from_args  # the policy needs this module's types

    try:
        return policy_from_args(args).open_store(getattr(args, "store", None))
    except ConfigError as exc:
        if exc.hint is None:
            exc.hint = "check --store / $S3SPILL_STORE"
        raise


#: Harness variables that name the harness's own session, in the order they are tried.
#: Claude Code sets CLAUDE_CODE_SESSION_ID (the hook payload's session_id) for its Bash
#: tool, its hooks and the stdio MCP servers it starts (seen in the env it builds for
#: them in Claude Code 2.1.332; env-vars docs, changelog 2.1.154).
HARNESS_SESSION_VARIABLES = ("CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID")


def session_from_args(args: argparse.Namespace, *, default: bool = True) -> str:
    """The session: ``--session``, ``$S3SPILL_SESSION``, a harness's own session, or the directory's.

    A first ``s3spill run -- CMD`` must work without any setup, and a later ``read`` in
    the same place must find what it stored: so, with ``default``, a call that names no
    session uses the harness's session variable where one is set, else one session per
    working directory (``dir-`` and 16 hex digits of the SHA-256 of its real path; the same
    directory always gives the same session). A server (``mcp``) passes ``default=False``:
    what it binds to must be named explicitly.
    """
    session = getattr(args, "session", None) or os.environ.get("S3SPILL_SESSION")
    if not session and default:
        session = next((os.environ[n] for n in HARNESS_SESSION_VARIABLES if os.environ.get(n)), None)
        session = session or directory_session()
    if not session:
        raise ConfigError("no session: pass --session ID or set S3SPILL_SESSION",
                          hint="the harness names the session its outputs belong to")
    try:
        return utf8(str(session))
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(f"session id {exc}", hint="check --session / $S3SPILL_SESSION") from None


def directory_session(path: str | None = None) -> str:
    """The default session of a working directory: stable, and no path in it (only a digest)."""
    real = os.path.realpath(path or os.getcwd())
    return "dir-" + hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def utf8(value: str) -> str:
    """An argparse type: text that will be stored or sent must be valid UTF-8.

    argv arrives decoded with surrogate escapes, so ``$'\\xff'`` becomes a lone surrogate
    that no JSON record or S3 header can carry; refusing it here is a usage error before
    any work starts (``run`` has not started its command yet, so no output is lost).
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"not valid UTF-8: {value!a}") from None
    return value



def _whole(value: str, least: int) -> int:
    """A whole number >= ``least``; every bound is said the same way (``--limit 0`` and
    ``--limit -1`` both read "must be >= 1")."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if number < least:
        raise argparse.ArgumentTypeError(f"must be >= {least}, got {number}")
    return number


def count(value: str) -> int:
    """An argparse type: a whole number >= 0 (a negative limit is a usage error, not a crash)."""
    return _whole(value, 0)


def positive(value: str) -> int:
    """An argparse type: a whole number >= 1."""
    return _whole(value, 1)


def duration(value: str) -> str:
    """An argparse type: a duration (``90s``, ``24h``, ``P1D``), checked while parsing so the
    usage error names its flag; kept as written, because ``gc plan`` prints it back in the
    ``gc apply`` command it suggests."""
    from s3spill.gc.models import parse_duration

    try:
        parse_duration(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value
