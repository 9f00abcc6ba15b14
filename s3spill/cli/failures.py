"""What an expected failure means to the person at the terminal: one line, a hint, an exit code.

Why one table looked up along the class hierarchy rather than ``except`` clauses in each
command or a chain of ``isinstance`` tests: the same failure (no credentials, an
unreachable endpoint, a full disk) can surface from any command, and it must read the
same and exit the same everywhere; a new exception class finds its family's row by its
MRO, and a test walks every class of :mod:`s3spill.errors` through the table, so no class
falls through to a hint that is not true of it.

Every line has one shape, ``s3spill: <what happened> (<what to do>)``, from
:func:`s3spill.cli.voice.say`.
A hint is given only where it holds for every place that raises the class; where no
family-wide hint is true, the raiser's own (``exc.hint``) is used, or none.

botocore is never imported here — a local-store user never loads it — so its exceptions
are matched by class name along their MRO, and only when their module is botocore's.
pydantic's ``ValidationError`` is matched the same way (by name, in ``pydantic_core``):
every command imports this table, and a read that never builds a model should not pay
pydantic's import for it.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass

from s3spill import errors as e
from s3spill.cli.exitcodes import ExitCode
from s3spill.cli.voice import say

_DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def _named(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _validation(exc: BaseException) -> str:
    from pydantic import ValidationError  # loaded already: one was raised

    assert isinstance(exc, ValidationError)
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err['msg']}" if where else str(err["msg"]))
    return "invalid value: " + "; ".join(parts)


def _os_text(exc: BaseException) -> str:
    assert isinstance(exc, OSError)
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


@dataclass(frozen=True)
class Rule:
    """How one exception family reads: its exit code, its hint ("" for none), its message."""

    code: ExitCode
    hint: str = ""
    what: Callable[[BaseException], str] = _named


@dataclass(frozen=True)
class Failure:
    """One line for stderr and the exit code that goes with it."""

    code: ExitCode
    what: str
    hint: str

    def line(self) -> str:
        return say(self.what, self.hint)


_GONE = "it was never written to this store, or it was deleted"
_RETRY = "another writer changed it at the same moment; run the command again"

#: Exception type -> how it reads. Looked up along the exception's MRO, nearest first.
TABLE: dict[type[BaseException], Rule] = {
    e.S3SpillError: Rule(ExitCode.ERROR),
    e.ConfigError: Rule(ExitCode.ERROR),  # the message names the value; the raiser hints
    e.PolicyError: Rule(ExitCode.ERROR),  # file:line: key: what is wrong; `config check` lists all
    e.InvalidKey: Rule(ExitCode.ERROR),
    e.StoreError: Rule(ExitCode.ERROR),  # S3's own refusals carry their hint (store.s3.ops)
    e.AlreadyExists: Rule(ExitCode.ERROR, "another writer created it first; nothing was "
                          "overwritten"),
    e.PreconditionFailed: Rule(ExitCode.ERROR, _RETRY),
    e.ConditionalConflict: Rule(ExitCode.ERROR, _RETRY),
    e.StreamNotReplayable: Rule(ExitCode.ERROR, "nothing was saved; run the command again"),
    e.NotFound: Rule(ExitCode.ERROR, _GONE),
    e.BucketNotFound: Rule(ExitCode.ERROR, "create the bucket or fix --store / $S3SPILL_STORE"),
    e.StoreNotFound: Rule(ExitCode.ERROR, "check --store / $S3SPILL_STORE; nothing was created, and "
                          "the first spill or run creates a store"),
    e.ArtifactNotFound: Rule(ExitCode.ERROR, "check the source id and the session; `s3spill ls` "
                             "lists this session's outputs"),
    e.ArtifactExpired: Rule(ExitCode.ERROR, "run the command that produced it again; to keep an "
                            "output past the TTL, publish a reference (`s3spill ref publish`)"),
    e.ArtifactErased: Rule(ExitCode.ERROR, "its session was erased on request; it cannot be "
                           "read again"),
    e.StoreUnavailable: Rule(ExitCode.UNAVAILABLE, "check the store's endpoint and the network, "
                             "then run the command again"),
    e.UnsupportedOperation: Rule(ExitCode.ERROR),  # S3's 501s carry the doctor hint (store.s3.ops)
    e.StoreCapabilityError: Rule(ExitCode.REFUSED, "nothing was written; `s3spill doctor` shows "
                                 "which guarantee the store lacks"),
    e.IntegrityError: Rule(ExitCode.CORRUPT, "nothing unverified was printed; the stored bytes "
                           "were changed or damaged"),
    e.SourceIdError: Rule(ExitCode.ERROR, "use a source id printed for this session"),
    e.InvalidRequest: Rule(ExitCode.ERROR),  # the message says what the artifact has
    e.ArtifactPublicationRejected: Rule(ExitCode.ERROR, "nothing was published"),
    e.LiveFenced: Rule(ExitCode.ERROR, "another process finished or took over this output; "
                       "`s3spill status LIVE_ID` shows how it ended"),
    e.JournalError: Rule(ExitCode.ERROR),
    e.JournalCorrupt: Rule(ExitCode.CORRUPT, "GC keeps every artifact of this session; see "
                           "`s3spill journal verify`"),
    e.JournalContention: Rule(ExitCode.ERROR, "other writers kept changing the journal; run the "
                              "command again"),
    e.TransactionStateError: Rule(ExitCode.ERROR, "`s3spill ref list` shows the transaction's "
                                  "state"),
    e.ArtifactCondemned: Rule(ExitCode.ERROR, "GC is deleting it; store the output again to "
                              "keep it"),
    e.ArtifactReferenced: Rule(ExitCode.REFUSED, "a lease protects it; nothing was deleted"),
    e.DanglingReference: Rule(ExitCode.ERROR, "nothing was published; check the source id"),
    e.SessionErased: Rule(ExitCode.ERROR, "the session was erased on request; use another "
                          "session"),
    e.CleanupRefused: Rule(ExitCode.REFUSED, "nothing was deleted"),
    e.GcRunLocked: Rule(ExitCode.LOCKED, "wait with --lock-wait SECONDS, or run again later; "
                        "nothing was deleted"),
    e.GcLockLost: Rule(ExitCode.REFUSED, "another run took the expired lock, so this one "
                       "stopped deleting; run again later"),
    UnicodeError: Rule(ExitCode.ERROR, what=lambda exc: f"not valid UTF-8: {exc}"),
    OSError: Rule(ExitCode.ERROR, what=_named),
    PermissionError: Rule(ExitCode.ERROR, "check the file's owner and mode",
                          lambda exc: f"permission denied: {_os_text(exc)}"),
    FileNotFoundError: Rule(ExitCode.ERROR, what=_os_text),
    NotADirectoryError: Rule(ExitCode.ERROR, what=_os_text),
    IsADirectoryError: Rule(ExitCode.ERROR, what=_os_text),
    FileExistsError: Rule(ExitCode.ERROR, what=_os_text),
    Exception: Rule(ExitCode.INTERNAL, "a bug: run again with --debug and report the traceback",
                    lambda exc: f"internal error: {_named(exc)}"),
}

_DISK_FULL_RULE = Rule(ExitCode.ERROR, "free space or raise the file size limit; nothing partial "
                       "was kept", lambda exc: f"disk full: {_os_text(exc)}")

_CREDENTIALS = Rule(ExitCode.ERROR, "set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                    "and AWS_REGION", lambda exc: f"AWS configuration: {exc}")
_UNREACHABLE = Rule(ExitCode.UNAVAILABLE, "check AWS_ENDPOINT_URL and the network, then retry",
                    lambda exc: f"store unreachable: {exc}")
#: botocore class name -> rule, matched along the MRO of a botocore exception.
BOTOCORE: dict[str, Rule] = {
    **dict.fromkeys(("NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
                     "NoAuthTokenError", "TokenRetrievalError", "SSOTokenLoadError",
                     "UnauthorizedSSOTokenError", "ProfileNotFound", "NoRegionError",
                     "InvalidConfigError", "ConfigNotFound"), _CREDENTIALS),
    **dict.fromkeys(("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError",
                     "ConnectionClosedError", "ProxyConnectionError", "SSLError",
                     "HTTPClientError", "ConnectionError"), _UNREACHABLE),
    "BotoCoreError": Rule(ExitCode.ERROR, what=lambda exc: f"S3 client: {_named(exc)}"),
}
#: pydantic's one exception (``pydantic.ValidationError`` is ``pydantic_core``'s class).
VALIDATION = Rule(ExitCode.ERROR, "the command's --help lists the accepted values", _validation)


def rule_for(exc: BaseException) -> Rule:
    """The nearest row of the tables along ``type(exc).__mro__`` (``Exception``'s at worst)."""
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL:  # an errno, not a class
        return _DISK_FULL_RULE
    for cls in type(exc).__mro__:
        if cls.__module__.startswith("botocore") and cls.__name__ in BOTOCORE:
            return BOTOCORE[cls.__name__]
        if cls.__name__ == "ValidationError" and cls.__module__.startswith("pydantic_core"):
            return VALIDATION
        if cls in TABLE:
            return TABLE[cls]
    return TABLE[Exception]


def describe(exc: BaseException) -> Failure:
    """The one line and exit code for ``exc``; INTERNAL for anything unforeseen (a bug).

    The raiser's own hint (``exc.hint``) beats the family's: it knows the one case.
    """
    rule = rule_for(exc)
    hint = getattr(exc, "hint", None) if isinstance(exc, e.S3SpillError) else None
    return Failure(rule.code, rule.what(exc), hint or rule.hint)
