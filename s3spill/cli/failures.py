"""What an expected failure means to the person at the terminal: one line, a hint, an exit code.

Why a table of exception families rather than ``except`` clauses in each command: the
same failure (no credentials, an unreachable endpoint, a full disk) can surface from any
command, and it must read the same and exit the same everywhere. botocore is never
imported here — a local-store user never loads it — so its exceptions are recognised
only once something else has imported it.
"""

from __future__ import annotations

import errno
import sys
from dataclasses import dataclass

from pydantic import ValidationError

from s3spill.cli.exitcodes import ExitCode
from s3spill.errors import (
    ArtifactExpired,
    ArtifactNotFound,
    BucketNotFound,
    CleanupRefused,
    ConfigError,
    IntegrityError,
    InvalidKey,
    InvalidRequest,
    JournalCorrupt,
    NotFound,
    S3SpillError,
    SourceIdError,
    StoreCapabilityError,
    StoreError,
    StoreUnavailable,
    UnsupportedOperation,
)

_DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
_CREDENTIALS = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
                "NoAuthTokenError", "TokenRetrievalError", "SSOTokenLoadError",
                "UnauthorizedSSOTokenError", "ProfileNotFound", "NoRegionError",
                "InvalidConfigError", "ConfigNotFound"}
_UNREACHABLE = {"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError",
                "ConnectionClosedError", "ProxyConnectionError", "SSLError", "HTTPClientError"}


@dataclass(frozen=True)
class Failure:
    """One line for stderr and the exit code that goes with it."""

    code: ExitCode
    what: str
    hint: str

    def line(self) -> str:
        what = " ".join(self.what.split())  # one line, whatever the message held
        return f"s3spill: error: {what} ({self.hint})" if self.hint else f"s3spill: error: {what}"


def _named(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _validation(exc: ValidationError) -> Failure:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err['msg']}" if where else str(err["msg"]))
    return Failure(ExitCode.ERROR, "invalid value: " + "; ".join(parts),
                   "see the command's --help for the accepted values")


def _ours(exc: S3SpillError) -> Failure:
    failure = _family(exc)
    if exc.hint:
        return Failure(failure.code, failure.what, exc.hint)
    return failure


def _family(exc: S3SpillError) -> Failure:
    if isinstance(exc, (IntegrityError, JournalCorrupt)):
        hint = ("GC keeps every artifact of this session; see `s3spill journal verify`"
                if isinstance(exc, JournalCorrupt) else
                "nothing unverified was printed; the stored bytes were changed or damaged")
        return Failure(ExitCode.CORRUPT, _named(exc), hint)
    if isinstance(exc, StoreUnavailable):
        return Failure(ExitCode.UNAVAILABLE, _named(exc),
                       "check the endpoint and the network, then retry; a write in flight may have landed")
    if isinstance(exc, CleanupRefused):
        return Failure(ExitCode.REFUSED, _named(exc), "nothing was deleted")
    if isinstance(exc, StoreCapabilityError):
        return Failure(ExitCode.REFUSED, _named(exc), "nothing was written; `s3spill doctor` "
                       "shows which guarantee the store lacks")
    if isinstance(exc, ConfigError):
        return Failure(ExitCode.ERROR, _named(exc), "check the value named above (the command's "
                       "--help lists the accepted forms)")
    if isinstance(exc, InvalidKey):
        return Failure(ExitCode.ERROR, _named(exc), "check --store / $S3SPILL_STORE")
    if isinstance(exc, SourceIdError):
        return Failure(ExitCode.ERROR, _named(exc), "use a source id printed for this session")
    if isinstance(exc, InvalidRequest):
        return Failure(ExitCode.ERROR, _named(exc), "see the command's --help")
    if isinstance(exc, ArtifactExpired):
        return Failure(ExitCode.ERROR, _named(exc), "to keep an output past the TTL, publish a "
                       "reference to it (`s3spill ref publish`)")
    if isinstance(exc, BucketNotFound):
        return Failure(ExitCode.ERROR, _named(exc), "create the bucket or fix --store")
    if isinstance(exc, ArtifactNotFound):
        return Failure(ExitCode.ERROR, _named(exc), "check the source id and --session; the "
                       "session's journal records no GC deletion of it")
    if isinstance(exc, NotFound):
        return Failure(ExitCode.ERROR, _named(exc), "it was never written, or GC deleted it")
    if isinstance(exc, UnsupportedOperation):
        return Failure(ExitCode.ERROR, _named(exc), "the store lacks a guarantee; run `s3spill "
                       "doctor`")
    if isinstance(exc, StoreError):
        return Failure(ExitCode.ERROR, _named(exc), "the store refused the request; check "
                       "permissions and the bucket")
    return Failure(ExitCode.ERROR, _named(exc), "nothing was changed that needs undoing")


def _botocore(exc: BaseException) -> Failure | None:
    name = type(exc).__name__
    if not type(exc).__module__.startswith("botocore"):
        return None
    if name in _CREDENTIALS:
        return Failure(ExitCode.ERROR, f"AWS configuration: {exc}",
                       "set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, and AWS_REGION")
    if name in _UNREACHABLE:
        return Failure(ExitCode.UNAVAILABLE, f"store unreachable: {exc}",
                       "check AWS_ENDPOINT_URL and the network, then retry")
    return Failure(ExitCode.ERROR, _named(exc), "the S3 client refused the request")


def _os(exc: OSError) -> Failure:
    where = f" ({exc.filename})" if exc.filename else ""
    text = f"{exc.strerror or exc}{where}"
    if exc.errno in _DISK_FULL:
        return Failure(ExitCode.ERROR, f"disk full: {text}",
                       "free space or raise the file size limit; nothing partial was kept")
    if isinstance(exc, PermissionError):
        return Failure(ExitCode.ERROR, f"permission denied: {text}",
                       "check the store directory's owner and mode")
    if isinstance(exc, (NotADirectoryError, FileExistsError, IsADirectoryError)):
        return Failure(ExitCode.ERROR, text, "a file:// store must be a directory (or not exist)")
    return Failure(ExitCode.ERROR, _named(exc), "an operating-system error")


def describe(exc: BaseException) -> Failure:
    """The one line and exit code for ``exc``; INTERNAL for anything unforeseen (a bug)."""
    if isinstance(exc, S3SpillError):
        return _ours(exc)
    if isinstance(exc, ValidationError):
        return _validation(exc)
    if "botocore" in sys.modules and (failure := _botocore(exc)) is not None:
        return failure
    if isinstance(exc, UnicodeError):
        return Failure(ExitCode.ERROR, f"not valid UTF-8: {exc}",
                       "pass text arguments as UTF-8")
    if isinstance(exc, OSError):
        return _os(exc)
    return Failure(ExitCode.INTERNAL, f"internal error: {_named(exc)}",
                   "a bug: run again with --debug and report the traceback")
