"""Bearer tokens for ``s3spill mcp --http --tokens FILE``: one HTTP server, many sessions.

Why tokens and not a session argument: the session decides which outputs a caller may
read, so it must come from the operator, never from the model or the request body. The
operator issues one token per agent session (``s3spill --session ID mcp --tokens FILE
--issue-token``); the token is printed once and only its SHA-256 is kept, so the file
grants nothing to whoever reads it. Every HTTP request must carry ``Authorization:
Bearer <token>``; the server hashes it, looks the hash up, and binds *that request* to the
session the file names — a request without a known token never reaches a tool (401).

The file (JSON, a versioned record, written atomically with mode 0600 under a lock)::

    {"kind": "s3spill_mcp_tokens", "schema_version": 1, "tokens": [
      {"sha256": "<64 hex>", "session": "run-42", "label": "ci agent", "created_at": "…"}]}

Revoking a token is deleting its entry; the server re-reads the file when it changes
(checked on every request, one ``stat``). A file that stops parsing fails closed: every
token is refused until it parses again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from s3spill.errors import ConfigError
from s3spill.log import get_logger
from s3spill.models import Record

log = get_logger("s3spill.mcp.tokens")

TOKEN_PREFIX = "s3s_"  # noqa: S105 - a prefix that makes leaked tokens greppable, not a secret


class TokenEntry(Record):
    """One issued token: its SHA-256 and the session it opens."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    session: str = Field(min_length=1, max_length=512)
    label: str | None = Field(default=None, max_length=200)
    created_at: datetime


class TokensFile(Record):
    kind: Literal["s3spill_mcp_tokens"] = "s3spill_mcp_tokens"
    tokens: tuple[TokenEntry, ...] = ()


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _read(path: Path) -> TokensFile:
    try:
        return TokensFile.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return TokensFile()
    except (ValidationError, ValueError) as exc:
        raise ConfigError(f"tokens file {path} does not parse: {str(exc).splitlines()[0]}") from None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock = path.with_name(path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(path: Path, doc: TokensFile) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(doc.model_dump_json(indent=1).encode() + b"\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def issue_token(path: str | Path, session: str, label: str | None = None) -> str:
    """Add a fresh token for ``session`` to the file (created if absent); returns the token.

    The token itself is not stored: print it once and hand it to the agent's MCP client.
    """
    if not session:
        raise ConfigError("a token needs the session it opens: pass --session ID")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    entry = TokenEntry(sha256=token_hash(token), session=session, label=label, created_at=datetime.now(UTC))
    with _locked(target):
        doc = _read(target)
        _write(target, doc.model_copy(update={"tokens": (*doc.tokens, entry)}))
    log.info("mcp.token_issued", label=label, tokens=len(doc.tokens) + 1)
    return token


class TokenRegistry:
    """Token hash -> session, re-read from the file whenever it changes; fails closed."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._sessions: dict[str, str] = {}
        self.refresh(strict=True)

    def refresh(self, *, strict: bool = False) -> None:
        """Re-read the file if it changed; ``strict`` raises instead of failing closed."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            if strict:
                raise ConfigError(f"no tokens file {self.path}: issue a token with --issue-token") from None
            stamp = None
        else:
            stamp = (st.st_mtime_ns, st.st_size)
        with self._lock:
            if stamp == self._stamp and stamp is not None:
                return
            try:
                doc = _read(self.path) if stamp is not None else TokensFile()
            except ConfigError:
                if strict:
                    raise
                log.error("mcp.tokens_unreadable", path=str(self.path))
                doc = TokensFile()  # fail closed: no token opens anything
            self._sessions = {entry.sha256: entry.session for entry in doc.tokens}
            self._stamp = stamp
            log.info("mcp.tokens_loaded", tokens=len(self._sessions))

    def session_for(self, token: str | None) -> str | None:
        """The session a presented token opens, or None."""
        if not token:
            return None
        self.refresh()
        with self._lock:
            return self._sessions.get(token_hash(token))

    def session_from_header(self, authorization: str | None) -> str | None:
        """The session an ``Authorization: Bearer <token>`` header opens, or None."""
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.session_for(token.strip())
