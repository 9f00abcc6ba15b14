"""Helpers shared by sub-commands: argument types, and the store and session from flags/env."""

from __future__ import annotations

import argparse
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from s3spill.errors import ConfigError, SourceIdError

if TYPE_CHECKING:  # the store layer loads when a command opens one, not when flags are parsed
    from s3spill.store import ObjectStore


def store_from_args(args: argparse.Namespace, *, create: bool = True) -> ObjectStore:
    """``--store``, else the fleet policy's (``[store] url`` / ``$S3SPILL_STORE``), with its KMS key.

    ``create=False`` for a command that only reads: a mistyped local path is refused
    (:class:`~s3spill.errors.StoreNotFound`), not made into an empty store.
    """
    from s3spill.cli.policy_args import policy_from_args  # the policy needs this module's types
    from s3spill.fleet.locate import store_needs_no_policy

    url = getattr(args, "store", None)
    try:
        if url != "" and store_needs_no_policy(getattr(args, "config", None), os.environ):
            from s3spill.store import open_store

            return open_store(url, create=create)  # what the policy's defaults would open
        return policy_from_args(args).open_store(url, create=create)
    except ConfigError as exc:
        if exc.hint is None:
            exc.hint = "check --store / $S3SPILL_STORE"
        raise


#: What ``--prefix`` means on every command that takes it (``stats``, ``quota show``).
PREFIX_HELP = "a tenant's prefix under the store's root (its own s3spill layout), such as tenant-a"


def tenant_store(args: argparse.Namespace, prefix: str | None, *, create: bool = True) -> ObjectStore:
    """The store of ``--prefix P``: the layout under ``<store root>/P`` (no P: the store itself).

    One meaning on every command: P is a path under the store that ``--store`` (or the
    policy) names, never a store URL of its own, which would be a second way to name a store.
    """
    if not prefix:
        return store_from_args(args, create=create)
    if "://" in prefix:
        raise ConfigError(f"--prefix takes a tenant prefix under the store's root, not a store URL: "
                          f"{prefix!r}", hint=f"give the store with --store {prefix}")
    from s3spill.errors import InvalidKey
    from s3spill.store.base import validate_prefix

    try:
        tenant = validate_prefix(prefix)
    except InvalidKey as exc:
        raise ConfigError(f"--prefix {prefix!r} is not a valid prefix: {exc}") from None
    with store_from_args(args, create=create) as base:
        url = base.url.rstrip("/") + "/" + tenant
    return store_from_args(argparse.Namespace(**{**vars(args), "store": url}), create=create)


#: Harness variables that name the harness's own session, in the order they are tried.
#: Claude Code sets CLAUDE_CODE_SESSION_ID (the hook payload's session_id) for its Bash
#: tool, its hooks and the stdio MCP servers it starts (seen in the env it builds for
#: them in Claude Code 2.1.332; env-vars docs, changelog 2.1.154).
HARNESS_SESSION_VARIABLES = ("CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID")


@dataclass(frozen=True)
class Session:
    """The session a call works in, and where it came from (said when an id does not match)."""

    id: str
    #: ``--session``, ``$S3SPILL_SESSION``, ``$CLAUDE_CODE_SESSION_ID``, ... or
    #: ``the working directory /path``.
    origin: str


def session_from_args(args: argparse.Namespace, *, default: bool = True) -> str:
    """The session: ``--session``, ``$S3SPILL_SESSION``, a harness's own session, or the directory's.

    A first ``s3spill run -- CMD`` must work without any setup, and a later ``read`` in
    the same place must find what it stored: so, with ``default``, a call that names no
    session uses the harness's session variable where one is set, else one session per
    working directory (``dir-`` and 16 hex digits of the SHA-256 of its real path; the same
    directory always gives the same session). A server (``mcp``) passes ``default=False``:
    what it binds to must be named explicitly.
    """
    return session_choice(args, default=default).id


def session_choice(args: argparse.Namespace, *, default: bool = True) -> Session:
    """:func:`session_from_args` with where the session came from."""
    choice = _named_session(args)
    if choice is None and default:
        choice = next((Session(os.environ[n], f"${n}") for n in HARNESS_SESSION_VARIABLES
                       if os.environ.get(n)), None)
        choice = choice or Session(directory_session(), f"the working directory {os.getcwd()}")
    if choice is None:
        raise ConfigError("no session: pass --session ID or set S3SPILL_SESSION",
                          hint="the harness names the session its outputs belong to")
    try:
        return Session(utf8(choice.id), choice.origin)
    except argparse.ArgumentTypeError as exc:
        raise ConfigError(f"session id {exc}", hint="check --session / $S3SPILL_SESSION") from None


def _named_session(args: argparse.Namespace) -> Session | None:
    """The session named by flag or variable (the variable is also the flag's default, so an
    equal value is said to come from the variable)."""
    env = os.environ.get("S3SPILL_SESSION")
    flag = getattr(args, "session", None)
    if flag and flag != env:
        return Session(str(flag), "--session")
    return Session(env, "$S3SPILL_SESSION") if env else None


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
    ``gc apply`` command it suggests. From :mod:`s3spill.config`, its home: ``gc.models``
    (which re-exports it) would import the whole garbage collector for one flag."""
    from s3spill.config import parse_duration

    try:
        parse_duration(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _known_sessions(args: argparse.Namespace) -> list[Session]:
    """Sessions this call could have meant, nearest first: the named ones, the harness's,
    and the directory sessions of the working directory, each directory above it, and the
    one before the last ``cd`` (``$OLDPWD``)."""
    found = [s for s in [_named_session(args)] if s is not None]
    found += [Session(os.environ[n], f"${n}") for n in HARNESS_SESSION_VARIABLES if os.environ.get(n)]
    here = os.path.realpath(os.getcwd())
    places = [here, *(str(p) for p in Path(here).parents)]
    if os.environ.get("OLDPWD"):
        places.append(os.path.realpath(os.environ["OLDPWD"]))
    found += [Session(directory_session(p), f"the working directory {p}") for p in places]
    return found


def explain_mismatch(exc: SourceIdError, args: argparse.Namespace) -> SourceIdError:
    """The same refusal, saying which session the id belongs to (where the CLI can tell),
    which session this call used and where each came from, and how to pick the id's."""
    from s3spill.keys import session_hash

    if not exc.session_hash:  # malformed, not another session's
        return exc
    try:
        mine = session_choice(args)
    except ConfigError:
        return exc
    owner = next((s for s in _known_sessions(args) if session_hash(s.id) == exc.session_hash), None)
    kind = "live" if exc.locator.startswith("live:") else "source"
    theirs = (f"session {owner.id} {_whence(owner)}" if owner else
              f"another session, whose hash is {exc.session_hash}")
    message = f"{kind} id {exc.locator} belongs to {theirs}, not to this call's session {mine.id} " \
              f"{_whence(mine)}"
    if owner is None:
        hint = ("pass --session or set S3SPILL_SESSION to the session that printed it; "
                "`s3spill ls` there lists its outputs")
    elif owner.origin.startswith("the working directory "):
        where = owner.origin.removeprefix("the working directory ")
        hint = f"run it from {where}, or pass --session {owner.id} or set S3SPILL_SESSION={owner.id}"
    else:
        hint = f"pass --session {owner.id} or set S3SPILL_SESSION={owner.id}"
    return SourceIdError(message, locator=exc.locator, session_hash=exc.session_hash,
                           hint=hint)


def _whence(session: Session) -> str:
    origin = session.origin
    return f"of {origin}" if origin.startswith("the working directory ") else f"named by {origin}"
