"""The one exception tree of s3spill.

Every error the library raises on purpose derives from :class:`S3SpillError`, so a
caller can catch the whole family at one boundary (the CLI does, and turns it into
one line and a non-zero exit). The storage errors name the *outcome* of a
conditional request, not the HTTP status that carried it, because S3 and its
emulators disagree on statuses (``If-Match`` on a missing key is a 404, not a 412).

::

    S3SpillError
    ├── ConfigError                  bad URL, bad policy, a refused dangerous setting
    │   └── PolicyError              a policy file or variable that does not check (file:line: key)
    ├── InvalidKey                   a key that could escape the store's prefix
    ├── StoreError                   anything the object store answered
    │   ├── AlreadyExists            If-None-Match lost: someone else created the key
    │   ├── PreconditionFailed       If-Match lost (includes S3's 404 to If-Match on a missing key)
    │   ├── ConditionalConflict      S3 409: a concurrent conditional write; re-read and retry
    │   │   └── StreamNotReplayable  ...on completing a one-shot stream: nothing saved, no retry possible
    │   ├── NotFound                 the key (or version) does not exist
    │   │   ├── BucketNotFound       the store's bucket itself does not exist
    │   │   ├── StoreNotFound        a local store's directory does not exist (a read never creates it)
    │   │   └── ArtifactNotFound     no artifact with this source id in the session
    │   │       ├── ArtifactExpired  ...and the journal records that GC deleted it
    │   │       └── ArtifactErased   ...because its session was erased on request (purge)
    │   ├── StoreUnavailable         transient faults that outlived retries and the deadline
    │   └── UnsupportedOperation     the backend cannot honour a requested guarantee
    │       └── StoreCapabilityError create-once / compare-and-swap not honoured (probed)
    ├── IntegrityError               bytes or records that do not match their digest
    ├── SourceIdError                a source id that is malformed or names another session
    ├── InvalidRequest               a page or search that cannot be served (offset past the end)
    ├── ArtifactPublicationRejected  the memory owner guarantees nothing was, or will be, written
    ├── LiveFenced                   another process took over a live artifact (declared it lost)
    ├── JournalError                 the lease journal could not be used
    │   ├── JournalCorrupt           chain break, sequence gap, foreign record, rewritten intent
    │   ├── JournalContention        CAS attempts exhausted against concurrent writers
    │   ├── TransactionStateError    a transition the state machine forbids
    │   ├── ArtifactCondemned        GC has fenced the artifact; no new claim may land
    │   ├── ArtifactReferenced       a live or pending claim protects it; GC may not condemn
    │   ├── DanglingReference        the claimed artifact is missing or has another digest
    │   └── SessionErased            the session was purged: its journal is sealed for good
    └── CleanupRefused               GC refuses to run (unsafe TTL, missing delete guarantee)
        ├── GcRunLocked              another run holds the scope's lock (and did not release it in time)
        └── GcLockLost               this run's lock was taken over after it expired; stop deleting
"""

from __future__ import annotations


class S3SpillError(Exception):
    """Root of every error s3spill raises deliberately."""

    #: What to do about this one failure, when the raiser knows better than its family's
    #: generic advice (the CLI prints it after the message).
    hint: str | None = None

    def __init__(self, *args: object, hint: str | None = None) -> None:
        super().__init__(*args)
        if hint:
            self.hint = hint


class ConfigError(S3SpillError):
    """A configuration value is malformed or refused as unsafe."""


class PolicyError(ConfigError):
    """The fleet policy does not check: each problem names its file and line (or variable) and key."""

    def __init__(self, problems: list[str] | str, *, hint: str | None = None) -> None:
        problems = [problems] if isinstance(problems, str) else problems
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        super().__init__(shown, hint=hint or "fix the policy; `s3spill config check FILE` lists "
                         "every problem")
        self.problems = problems


class InvalidKey(S3SpillError):
    """A key would leave the store's prefix or is not in the key alphabet."""


class StoreError(S3SpillError):
    """An object-store request did not do what was asked."""

    def __init__(self, message: str, *, key: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.key = key


class AlreadyExists(StoreError):
    """A create-if-absent lost: the key already holds an object written by someone else."""


class PreconditionFailed(StoreError):
    """A compare-and-swap lost: the object's ETag (or existence) is not what was expected."""


class ConditionalConflict(StoreError):
    """S3 answered 409 ConditionalRequestConflict: re-read and retry; never means "exists"."""


class StreamNotReplayable(ConditionalConflict):
    """A 409 on completing an upload fed by a one-shot stream: S3 wants every part sent
    again, the stream cannot give them twice (it was never spooled), so nothing was saved."""


class NotFound(StoreError):
    """The key or version does not exist."""


class BucketNotFound(NotFound):
    """The bucket the store URL names does not exist (not one missing key)."""


class StoreNotFound(NotFound):
    """The local store a URL names does not exist, and the call only reads: a mistyped path
    must not become a new, empty store that then seems to have lost everything."""


class StoreUnavailable(StoreError):
    """The store kept failing transiently until the retry budget or the deadline ran out."""


class UnsupportedOperation(StoreError):
    """The backend does not honour the guarantee an operation needs."""


class StoreCapabilityError(UnsupportedOperation):
    """The store does not honour create-once or compare-and-swap, so the journal, the
    owner and GC refuse to run on it (a store that ignores ``If-None-Match`` /
    ``If-Match`` silently loses concurrent updates). ``table`` is the doctor's table of
    what was probed; ``missing`` names the guarantees that failed.
    """

    def __init__(self, message: str, *, missing: list[str] | None = None, table: str = "") -> None:
        super().__init__(message)
        self.missing = list(missing or [])
        self.table = table


class IntegrityError(S3SpillError):
    """Bytes or records do not match the digest that vouches for them."""


class SourceIdError(S3SpillError):
    """A source id is malformed, path-like, or belongs to another session.

    For a well-formed id of another session, ``locator`` is the id and ``session_hash`` the
    hash of the session it belongs to, so a caller that knows where its own session came
    from (the CLI) can say which session the id belongs to; both are empty otherwise.
    """

    def __init__(self, message: str, *, locator: str = "", session_hash: str = "",
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.locator = locator
        self.session_hash = session_hash


class InvalidRequest(S3SpillError, ValueError):
    """A page or search request that cannot be served as asked (offset past the end, bad regex)."""


class ArtifactPublicationRejected(S3SpillError):
    """Raised by a publisher to guarantee that no reference was, or will ever be, written.

    Only this exception lets the journal abort a prepared transaction; any other
    exception leaves the transaction PREPARED because the write may have landed.
    """


class LiveFenced(S3SpillError):
    """A live artifact's writer found its state taken over (declared lost, or finished by
    someone else): it must stop writing, because its next segment would be read by nobody."""


class JournalError(S3SpillError):
    """The lease journal could not be read or written as required."""


class JournalCorrupt(JournalError):
    """The journal failed verification; GC must retain everything in the session.

    ``reason`` is a stable code (``hash_mismatch``, ``chain_break``, ``sequence_gap``,
    ``foreign_record``, ``rewritten_intent``, ``unparseable``, ``invalid_transition``,
    ``view_mismatch``, ``segment_missing``, ``segment_mismatch``, ``generation``,
    ``manifest_missing``, ``rollback``: owner slots or segments show history the manifest
    lacks) for
    reports and tests; the message says what was found where, in words.
    """

    def __init__(self, message: str, *, reason: str = "corrupt", session_hash: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.session_hash = session_hash


class JournalContention(JournalError):
    """Compare-and-swap attempts on the manifest were exhausted."""


class TransactionStateError(JournalError):
    """A transition the lease state machine forbids (e.g. commit after abort)."""


class ArtifactCondemned(JournalError):
    """GC has condemned the artifact; a new claim on it is refused."""


class ArtifactReferenced(JournalError):
    """A pending or unexpired claim protects the artifact; condemnation refused."""


class DanglingReference(JournalError):
    """A claim names an artifact that does not exist with the claimed digest; refused."""


class CleanupRefused(S3SpillError):
    """GC refuses to plan or apply (unsafe TTL, missing delete guarantee, bad plan)."""


class GcRunLocked(CleanupRefused):
    """Another GC run holds this scope's lock; wait for it or let it expire."""


class GcLockLost(CleanupRefused):
    """This run's lock expired and was taken over: it must not delete any more."""


class ArtifactNotFound(NotFound):
    """No artifact with this source id is stored in the session: never written here (a
    wrong or made-up id), or deleted. Said without guessing which; only the session's
    journal can tell that GC deleted it (:class:`ArtifactExpired`)."""

    def __init__(self, message: str, *, key: str | None = None, source_id: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, key=key, hint=hint)
        self.source_id = source_id


class ArtifactExpired(ArtifactNotFound):
    """The artifact a pointer names is gone because GC deleted it after its TTL: the
    session's journal records the deletion.

    Its own type so a harness and the model can tell "expired, re-run it" from a broken
    store or a wrong id: the output was recoverable by re-running the command that produced it.
    """


class ArtifactErased(ArtifactNotFound):
    """The artifact's session was erased on request (``s3spill purge``): it is gone for good.

    Not :class:`ArtifactExpired`: re-running the command would store it again in a session
    whose owner asked for everything of it to be deleted.
    """


class SessionErased(JournalError):
    """The session was purged: its manifest is a tombstone and no record can be added."""
