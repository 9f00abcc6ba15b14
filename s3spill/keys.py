"""The key layout, derived only from trusted parts.

Untrusted strings (session ids, tool names, transaction ids, source ids) never
become raw key segments: a session id is hashed, a tool name is reduced to a short
token from a fixed alphabet, and every key is checked against
:func:`~s3spill.store.base.validate_key` (the store layer's own rule, which every
backend applies again) before any store sees it. The layout below is also what the Terraform bucket policy
matches on, so changing it is a breaking change (bump ``LAYOUT_VERSION``)::

    <prefix>/v1/sessions/<session_hash>/artifacts/<name>         artifact body
    <prefix>/v1/sessions/<session_hash>/artifacts/<name>.idx     its sidecar index
    <prefix>/v1/sessions/<session_hash>/journal/manifest.json    lease manifest (CAS)
    <prefix>/v1/sessions/<session_hash>/journal/segments/<from>-<to>-<sha16>.json  history
    <prefix>/v1/sessions/<session_hash>/journal/usage.json       the session's quota counter (CAS)
    <prefix>/v1/owner/<session_hash>/<txid_hash>.json            memory publication slot
    <prefix>/v1/usage/shard-<k>.json                             the store's quota counters (CAS)
    <prefix>/v1/erasures/<session_hash>.json                     the audit record of a purge
    <prefix>/v1/gc/plans/<plan_id>.jsonl                         a cleanup plan kept in the store
    <prefix>/v1/gc/locks/<scope>.json                            a GC run's lock (expiry + fence)
    <prefix>/v1/sessions/<session_hash>/live/<name>/state.json   a live artifact's state (CAS)
    <prefix>/v1/sessions/<session_hash>/live/<name>/<seq>-<sha16>.seg  one of its segments
    <prefix>/v1/sessions/<session_hash>/live/<name>/<first>-<last>-<sha16>.tbl  older segments' list
    <prefix>/v1/sessions/<session_hash>/usage/dt=<YYYY-MM-DD>/<stamp>-<rand12>-z<n>.ndjson.zst  usage events
    <prefix>/v1/sessions/<session_hash>/usage/days/dt=<YYYY-MM-DD>/day-<sha16>.parquet  a compacted day

Usage events sit under the session's prefix so that GC and purge handle them as the
session's own objects (removed with it); the ``dt=`` segment is a Hive partition, so an
engine globbing ``v1/sessions/*/usage/dt=*/*`` reads a fleet's usage by day (docs/usage.md).
Day files have their own folder: an engine reads one format per table location.

``<prefix>`` is the store's own root (``s3://bucket/prefix``); keys here are
relative to it.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from s3spill.errors import InvalidKey, SourceIdError
from s3spill.store.base import validate_key, validate_prefix

__all__ = [
    "ERASURES",
    "GC_LOCKS",
    "GC_PLANS",
    "INDEX_SUFFIX",
    "LAYOUT_VERSION",
    "LIVE_SCHEME",
    "OWNER",
    "SESSIONS",
    "USAGE",
    "HashedSession",
    "LiveId",
    "ParsedKey",
    "SourceId",
    "artifact_key",
    "check_artifact_name",
    "check_session_hash",
    "erasure_key",
    "gc_lock_key",
    "gc_plan_key",
    "index_key",
    "is_live_id",
    "live_prefix",
    "live_segment_key",
    "live_state_key",
    "live_table_key",
    "manifest_key",
    "new_artifact_name",
    "owner_slot_key",
    "parse_key",
    "prefix_usage_key",
    "segment_key",
    "session_hash",
    "session_prefix",
    "session_usage_key",
    "tool_token",
    "usage_day_key",
    "usage_part_key",
    "usage_prefix",
    "validate_key",
    "validate_prefix",
]

LAYOUT_VERSION = "v1"
SESSIONS = f"{LAYOUT_VERSION}/sessions"
OWNER = f"{LAYOUT_VERSION}/owner"
GC_PLANS = f"{LAYOUT_VERSION}/gc/plans"
GC_LOCKS = f"{LAYOUT_VERSION}/gc/locks"
USAGE = f"{LAYOUT_VERSION}/usage"
ERASURES = f"{LAYOUT_VERSION}/erasures"
INDEX_SUFFIX = ".idx"
LIVE_SCHEME = "live"

_HEX32 = re.compile(r"^[0-9a-f]{32}\Z")
_NAME = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}-[a-z0-9_-]{1,24}\Z")
_SHA_PREFIX = re.compile(r"^[0-9a-f]{16}\Z")
_LIVE_SEGMENT = re.compile(r"^[0-9]{10}-[0-9a-f]{16}\.seg\Z")
_LIVE_TABLE = re.compile(r"^[0-9]{10}-[0-9]{10}-[0-9a-f]{16}\.tbl\Z")
_USAGE_DAY = re.compile(r"^dt=[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
#: A part: ``<stamp>-<rand12>-z<n>.ndjson.zst`` (two zstd frames: the fact lines, then the shown
#: texts; ``n`` the first frame's byte length), or as written before, ``<stamp>-<rand12>[-f<n>].ndjson``
#: (plain; ``n`` the fact lines' length). ``stats`` reads only ``[0, n)`` (s3spill.usage.source).
_USAGE_PART = re.compile(
    r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}(?:(?:-f[0-9]{1,15})?\.ndjson|-z[0-9]{1,15}\.ndjson\.zst)\Z")
_USAGE_COMPACT = re.compile(r"^day-[0-9a-f]{16}\.parquet\Z")


class HashedSession(str):
    """A session named by its hash, for operator tools (``s3spill ui``) that never learn ids.

    A type, not a spelling: no string a model sends can become one, so a tool bound to a
    session id still refuses every other session; the web view binds its read tools with
    one to read a listed session exactly as its model did (same reads, same masking).
    """

    def __new__(cls, shash: str) -> HashedSession:
        return super().__new__(cls, check_session_hash(shash))


def session_hash(session_id: str) -> str:
    """Hash a session id into the 32-hex-digit token used in keys and source ids."""
    if isinstance(session_id, HashedSession):
        return str.__str__(session_id)
    if not isinstance(session_id, str) or not session_id:
        raise InvalidKey("session id must be a non-empty string")
    return hashlib.sha256(b"s3spill-session\0" + session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def check_session_hash(value: str) -> str:
    if not _HEX32.match(value):
        raise InvalidKey("not a session hash")
    return value


def tool_token(tool: str | None) -> str:
    """Reduce an untrusted tool name to ``[a-z0-9_-]{1,24}``; hash-suffixed when lossy."""
    raw = tool or "tool"
    cleaned = re.sub(r"[^a-z0-9_-]+", "_", raw.lower()).strip("_-") or "tool"
    if cleaned != raw or len(cleaned) > 24:
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:6]
        cleaned = f"{cleaned[:17]}-{digest}"
    return cleaned[:24]


def new_artifact_name(tool: str | None, now: datetime | None = None) -> str:
    """A fresh, never-reused artifact name: UTC timestamp, 6 random bytes, tool token."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(6)}-{tool_token(tool)}"


def check_artifact_name(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidKey("not an artifact name")
    return name


def session_prefix(shash: str) -> str:
    return f"{SESSIONS}/{check_session_hash(shash)}/"


def artifact_key(shash: str, name: str) -> str:
    return validate_key(f"{SESSIONS}/{check_session_hash(shash)}/artifacts/{check_artifact_name(name)}")


def index_key(shash: str, name: str) -> str:
    return artifact_key(shash, name) + INDEX_SUFFIX


def manifest_key(shash: str) -> str:
    return validate_key(f"{SESSIONS}/{check_session_hash(shash)}/journal/manifest.json")


def segment_key(shash: str, first_seq: int, last_seq: int, content_sha256: str | None = None) -> str:
    """A history segment's key: its sequence range, plus a content digest prefix when given.

    The journal always passes the digest, which makes segments content-addressed: two
    writers that compact the same range write byte-identical bodies to the same key, and
    anything else (a leftover from an older incarnation of the manifest, a stray object)
    lands on a different key instead of blocking or impersonating the real segment.
    """
    if first_seq < 0 or last_seq < first_seq:
        raise InvalidKey("bad segment range")
    suffix = ""
    if content_sha256 is not None:
        if not re.match(r"^[0-9a-f]{64}\Z", content_sha256):
            raise InvalidKey("bad segment digest")
        suffix = f"-{content_sha256[:16]}"
    return validate_key(
        f"{SESSIONS}/{check_session_hash(shash)}/journal/segments/"
        f"{first_seq:012d}-{last_seq:012d}{suffix}.json"
    )


def live_prefix(shash: str, name: str) -> str:
    """Everything of one live artifact (its state and segments) sits under this prefix."""
    return validate_key(
        f"{SESSIONS}/{check_session_hash(shash)}/live/{check_artifact_name(name)}") + "/"


def live_state_key(shash: str, name: str) -> str:
    return validate_key(live_prefix(shash, name) + "state.json")


def live_segment_key(shash: str, name: str, seq: int, sha256: str) -> str:
    """Segment ``seq`` of a live artifact; content-addressed, so a stray object never
    impersonates the segment the state lists."""
    if not 0 <= seq < 10**10 or not re.match(r"^[0-9a-f]{64}\Z", sha256):
        raise InvalidKey("bad live segment")
    return validate_key(live_prefix(shash, name) + f"{seq:010d}-{sha256[:16]}.seg")


def live_table_key(shash: str, name: str, first_seq: int, last_seq: int, sha256: str) -> str:
    """The immutable list of segments ``first_seq``-``last_seq`` (moved out of the state so
    the state stays small however long the output); content-addressed like a segment."""
    if not 0 <= first_seq <= last_seq < 10**10 or not re.match(r"^[0-9a-f]{64}\Z", sha256):
        raise InvalidKey("bad live table")
    return validate_key(live_prefix(shash, name) + f"{first_seq:010d}-{last_seq:010d}-{sha256[:16]}.tbl")


def usage_prefix(shash: str, day: str | None = None, *, days: bool = False) -> str:
    """A session's usage events (all days, or one ``YYYY-MM-DD`` day partition of its parts,
    or with ``days`` of its compacted day files)."""
    base = f"{SESSIONS}/{check_session_hash(shash)}/usage/"
    if day is None:
        return base
    if days:
        base += "days/"
    if not _USAGE_DAY.match(f"dt={day}"):
        raise InvalidKey("bad usage day")
    return validate_key(f"{base}dt={day}") + "/"


def usage_part_key(shash: str, day: str, now: datetime | None = None, *, facts: int | None = None,
                   zstd: bool = False) -> str:
    """A fresh, never-reused key for one batch of a session's usage events of ``day``
    (``facts``: the byte length of its leading fact lines — with ``zstd``, of the zstd frame
    holding them — named in the key). Plain NDJSON keys are what older writers made."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    if zstd:
        if facts is None:
            raise InvalidKey("a zstd usage part names its fact frame's length")
        leaf = f"{stamp}-{secrets.token_hex(6)}-z{int(facts)}.ndjson.zst"
        return validate_key(usage_prefix(shash, day) + leaf)
    tail = "" if facts is None else f"-f{int(facts)}"
    return validate_key(usage_prefix(shash, day) + f"{stamp}-{secrets.token_hex(6)}{tail}.ndjson")


def usage_day_key(shash: str, day: str, sha256: str) -> str:
    """A compacted day of a session's usage; content-addressed like a journal segment."""
    if not re.match(r"^[0-9a-f]{64}\Z", sha256):
        raise InvalidKey("bad usage digest")
    return validate_key(usage_prefix(shash, day, days=True) + f"day-{sha256[:16]}.parquet")


def owner_slot_key(shash: str, transaction_id: str) -> str:
    """One publication slot per transaction id; the id itself is hashed, never embedded."""
    tx = hashlib.sha256(b"s3spill-txid\0" + transaction_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    return validate_key(f"{OWNER}/{check_session_hash(shash)}/{tx}.json")


def session_usage_key(shash: str) -> str:
    """The session's quota counter (bytes and objects it stored), changed by CAS."""
    return validate_key(f"{SESSIONS}/{check_session_hash(shash)}/journal/usage.json")


def prefix_usage_key(shard: int) -> str:
    """One shard of the store-wide quota counter (sharded: every spill of a fleet adds to it)."""
    if not 0 <= shard < 1000:
        raise InvalidKey("bad usage shard")
    return validate_key(f"{USAGE}/shard-{shard:03d}.json")


def erasure_key(shash: str) -> str:
    """The audit record a purge leaves: what it deleted, who asked; never any content."""
    return validate_key(f"{ERASURES}/{check_session_hash(shash)}.json")


def gc_plan_key(plan_id: str) -> str:
    """Where ``gc plan --out store`` keeps a plan; GC never deletes it."""
    return validate_key(f"{GC_PLANS}/{plan_id}.jsonl")


def gc_lock_key(scope: str) -> str:
    """The run lock of one GC scope (``all``, ``session-<hash>``, ``shard-<i>-of-<n>``)."""
    if not re.match(r"^(all|session-[0-9a-f]{32}|shard-[0-9]{1,6}-of-[0-9]{1,6})\Z", scope):
        raise InvalidKey("bad GC lock scope")
    return validate_key(f"{GC_LOCKS}/{scope}.json")


@dataclass(frozen=True)
class ParsedKey:
    """What a listed key is, by layout; ``kind`` is ``unknown`` for anything else."""

    #: artifact | index | manifest | segment | usage | live_state | live_segment | live_table |
    #: usage_log | owner | erasure | gc_plan | gc_lock | unknown
    kind: str
    session_hash: str | None = None
    name: str | None = None

    @classmethod
    def of(cls, kind: str, session_hash: str | None, name: str | None) -> ParsedKey:
        """The constructor's instance, filled at once (its ``__init__``: 2.5 µs, a setattr a field)."""
        parsed = object.__new__(cls)
        parsed.__dict__.update(kind=kind, session_hash=session_hash, name=name)
        return parsed


def parse_key(key: str) -> ParsedKey:
    """Classify a key found by listing; anything off-layout is ``unknown`` (GC leaves it)."""
    parts = key.split("/")
    if len(parts) >= 5 and parts[1] == "sessions" and parts[0] == LAYOUT_VERSION and _HEX32.match(parts[2]):
        return _session_key(parts)
    return _store_key(key, parts)


def _session_key(parts: list[str]) -> ParsedKey:
    """A key under ``v1/sessions/<session_hash>/``."""
    shash, area = parts[2], parts[3:]
    if len(area) == 2:
        leaf = area[1]
        if area[0] == "artifacts":
            if leaf.endswith(INDEX_SUFFIX) and _NAME.match(leaf[: -len(INDEX_SUFFIX)]):
                return ParsedKey.of("index", shash, leaf[: -len(INDEX_SUFFIX)])
            if _NAME.match(leaf):
                return ParsedKey.of("artifact", shash, leaf)
        if area[0] == "journal" and leaf in ("manifest.json", "usage.json"):
            return ParsedKey("manifest" if leaf == "manifest.json" else "usage", shash)
    if (len(area) == 3 and area[:2] == ["journal", "segments"]
            and re.match(r"^[0-9]{12}-[0-9]{12}(-[0-9a-f]{16})?\.json\Z", area[2])):
        return ParsedKey("segment", shash)
    if len(area) == 3 and area[0] == "usage" and _USAGE_DAY.match(area[1]) and _USAGE_PART.match(area[2]):
        return ParsedKey("usage_log", shash, f"{area[1]}/{area[2]}")
    if (len(area) == 4 and area[:2] == ["usage", "days"] and _USAGE_DAY.match(area[2])
            and _USAGE_COMPACT.match(area[3])):
        return ParsedKey("usage_log", shash, f"days/{area[2]}/{area[3]}")
    if len(area) == 3 and area[0] == "live" and _NAME.match(area[1]):
        leaf = area[2]
        kind = ("live_state" if leaf == "state.json" else "live_segment" if _LIVE_SEGMENT.match(leaf)
                else "live_table" if _LIVE_TABLE.match(leaf) else None)
        if kind:
            return ParsedKey(kind, shash, area[1])
    return ParsedKey("unknown")


def _store_key(key: str, parts: list[str]) -> ParsedKey:
    """A key outside any session's prefix: owner slots, store counters, audit records, GC's own."""
    if (len(parts) == 4 and f"{parts[0]}/{parts[1]}" == OWNER and _HEX32.match(parts[2])
            and re.match(r"^[0-9a-f]{40}\.json\Z", parts[3])):
        return ParsedKey("owner", parts[2])
    if len(parts) == 3 and key.startswith(USAGE + "/") and re.match(r"^shard-[0-9]{3}\.json\Z", parts[2]):
        return ParsedKey("usage")
    if len(parts) == 3 and key.startswith(ERASURES + "/") and re.match(r"^[0-9a-f]{32}\.json\Z", parts[2]):
        return ParsedKey("erasure")  # no session hash: GC must not group it with a session
    if key.startswith(GC_PLANS + "/"):
        return ParsedKey("gc_plan")
    if key.startswith(GC_LOCKS + "/"):
        return ParsedKey("gc_lock")
    return ParsedKey("unknown")


@dataclass(frozen=True)
class SourceId:
    """``artifact:<session_hash>:<name>:<sha256 prefix>`` — the model-facing locator."""

    session_hash: str
    name: str
    sha256_prefix: str

    def __str__(self) -> str:
        return f"artifact:{self.session_hash}:{self.name}:{self.sha256_prefix}"

    @classmethod
    def parse(cls, text: str) -> SourceId:
        """Parse strictly: exactly four fields, each in its own alphabet, nothing path-like.

        Cached per exact ``str`` (a SourceId is immutable, a refused text raises and is
        never cached): the journal parses each GC record's id three times on its way
        (the record's shape, the fold, the ledger), a tenth of the record's cost.
        """
        if cls is SourceId and type(text) is str:
            return _parsed_source_id(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> SourceId:
        if not isinstance(text, str) or len(text) > 200:
            raise SourceIdError("malformed source id")
        parts = text.strip().split(":")
        if len(parts) != 4 or parts[0] != "artifact":
            raise SourceIdError(
                f"malformed source id {text[:80]!r}: expected artifact:<session>:<name>:<sha>"
            )
        _, shash, name, prefix = parts
        if not _HEX32.match(shash) or not _NAME.match(name) or not _SHA_PREFIX.match(prefix):
            raise SourceIdError(f"malformed source id {text[:80]!r}")
        return cls(shash, name, prefix)

    def require_session(self, session_id: str) -> SourceId:
        """Refuse an id that belongs to any session other than the caller's."""
        if self.session_hash != session_hash(session_id):
            raise SourceIdError(f"source id {self} does not belong to this session",
                                locator=str(self), session_hash=self.session_hash)
        return self


#: :meth:`SourceId.parse` of an exact ``str``; a refused id raises and is not cached.
_parsed_source_id = functools.lru_cache(maxsize=8192)(SourceId._parse)


def is_live_id(text: object) -> bool:
    """Whether a locator names a live artifact (``live:...``) rather than a stored one."""
    return isinstance(text, (str, LiveId)) and str(text).strip().startswith(LIVE_SCHEME + ":")


@dataclass(frozen=True)
class LiveId:
    """``live:<session_hash>:<name>`` — the locator of a running (or finished) command's output.

    No digest: it is handed out before the first byte exists. Reads verify each segment
    against the digest its state lists, and the finished artifact has its own source id.
    """

    session_hash: str
    name: str

    def __str__(self) -> str:
        return f"{LIVE_SCHEME}:{self.session_hash}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> LiveId:
        if not isinstance(text, str) or len(text) > 200:
            raise SourceIdError("malformed live id")
        parts = text.strip().split(":")
        if (len(parts) != 3 or parts[0] != LIVE_SCHEME or not _HEX32.match(parts[1])
                or not _NAME.match(parts[2])):
            raise SourceIdError(f"malformed live id {text[:80]!r}: expected live:<session>:<name>")
        return cls(parts[1], parts[2])

    def require_session(self, session_id: str) -> LiveId:
        if self.session_hash != session_hash(session_id):
            raise SourceIdError(f"live id {self} does not belong to this session",
                                locator=str(self), session_hash=self.session_hash)
        return self
