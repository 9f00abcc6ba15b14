"""A journal record's fields and their checks, by hand: what its pydantic model checked.

Why by hand: GC writes two records per deleted artifact and reads every record of a
session, and building, dumping and copying a validated model per record was most of what
a GC compare-and-swap cost in Python (issue 35). A stored record is untrusted input, so
every check the model (``JournalRecord``, kept in the tests as the reference) made is kept
here: unknown and missing fields; each field's type; the session hash and the digests as
lowercase hex of their length; the sequence ``>= 0``, the size ``>= 0``, the claim's
reference count ``>= 1``; the transaction and plan ids in their alphabet; the ETag and the
reason at most 200 characters, the version id at most 1024; the literal kind, schema
version and event; and the shape rules that tie an event to its fields.

Types are checked strictly, where the model's lax mode coerced: ``true`` or ``1.0`` for an
integer or the schema version, a number written as a string, a date written as a number
(a Unix time) or in another form than ``YYYY-MM-DDTHH:MM:SS[.ffffff][Z|±HH:MM]`` is
refused here. Our writer wrote none of these (its JSON was the model's, byte for byte, and
still is: :func:`new_record` builds the same object, so the hash chain is unchanged), so a
journal it wrote reads as before and a damaged one is refused at least where the model
refused it. A source id that does not parse is refused as an invalid record (the model let
the parser's own error escape).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NoReturn

from s3spill.errors import S3SpillError
from s3spill.keys import SourceId
from s3spill.leases.journal_format import TX_EVENTS, compute_record_hash
from s3spill.models import ArtifactRetentionClaim

__all__ = ["EVENTS", "JournalRecord", "RecordInvalid", "check_record", "iso_datetime", "new_record",
           "parse_datetime"]

EVENTS = frozenset({"PREPARED", "COMMITTED", "ABORTED", "RELEASED", "CONDEMNED", "DELETED", "LIFTED"})
_OPTIONAL = ("transaction_id", "claim", "intent_sha256", "source_id", "sha256", "plan_id", "etag", "size",
             "version_id", "reason")
_OPTIONAL_NAMES = frozenset(_OPTIONAL)
_FIELDS = frozenset({"schema_version", "kind", "session_hash", "sequence", "prev_hash", "event", "at",
                     "record_hash", *_OPTIONAL})
_CLAIM_FIELDS = frozenset({"schema_version", "kind", "source_id", "sha256", "reference_count",
                           "retain_until"})
_HEX32 = re.compile(r"[0-9a-f]{32}").fullmatch
_HEX64 = re.compile(r"[0-9a-f]{64}").fullmatch
#: The model's ``^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`` (its regex engine's ``$`` is the end
#: of the text; ``fullmatch`` is the same here, where ``$`` would also pass a final newline).
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}").fullmatch
#: The dates our writer writes (pydantic's JSON form): ASCII digits only.
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?"
                       r"(?:Z|[+-][0-9]{2}:[0-9]{2})?").fullmatch
_ZERO = timedelta(0)


class RecordInvalid(ValueError):
    """A stored record whose fields are missing, unknown, of the wrong type or shape."""


@dataclass(slots=True, eq=False)
class JournalRecord:
    """One chained journal event, checked (see :func:`check_record`); the stored JSON object
    is what is hashed and kept, this is what the fold reads (never changed: not frozen only
    because a frozen dataclass's ``__init__`` costs three times as much)."""

    session_hash: str
    sequence: int
    prev_hash: str
    event: str
    at: datetime
    record_hash: str
    transaction_id: str | None = None
    claim: ArtifactRetentionClaim | None = None
    intent_sha256: str | None = None
    source_id: str | None = None
    sha256: str | None = None
    plan_id: str | None = None
    etag: str | None = None
    size: int | None = None
    version_id: str | None = None
    reason: str | None = None


def iso_datetime(value: datetime) -> str:
    """``value`` exactly as pydantic writes a datetime in JSON (``Z`` for UTC, no fraction
    when whole seconds); any other zone is left to pydantic itself (it drops seconds of an offset)."""
    offset = value.utcoffset()
    if offset is None:
        return value.isoformat()
    if offset == _ZERO:
        return value.replace(tzinfo=None).isoformat() + "Z"
    from pydantic import TypeAdapter  # rare: clocks give UTC

    out: str = TypeAdapter(datetime).dump_python(value, mode="json")
    return out


def new_record(*, session_hash: str, sequence: int, prev_hash: str, event: str, at: datetime | str,
               **fields: Any) -> tuple[dict[str, Any], JournalRecord]:
    """The stored JSON object of a new record, hash included, and the record checked as a
    stored one is: the object the model's ``model_dump(mode="json", exclude_none=True)``
    gave (``None`` fields left out, the claim as its own JSON without them). ``at`` may be
    given as :func:`iso_datetime` wrote it (a write's records share one time)."""
    if not fields.keys() <= _OPTIONAL_NAMES:
        raise RecordInvalid(f"unknown record fields: {', '.join(sorted(fields.keys() - _OPTIONAL_NAMES))}")
    raw: dict[str, Any] = {"schema_version": 1, "kind": "journal_record", "session_hash": session_hash,
                           "sequence": sequence, "prev_hash": prev_hash, "event": event,
                           "at": iso_datetime(at) if isinstance(at, datetime) else at}
    for name, value in fields.items():
        if value is not None:
            raw[name] = value
    claim = fields.get("claim")
    if isinstance(claim, ArtifactRetentionClaim):
        raw["claim"] = claim.model_dump(mode="json", exclude_none=True)
    raw["record_hash"] = compute_record_hash(raw)
    rec = check_record(raw)  # our own record obeys every rule a reader applies
    if isinstance(claim, ArtifactRetentionClaim):
        rec = dataclasses.replace(rec, claim=claim)  # the caller's claim, as the model kept it
    return raw, rec


def check_record(raw: Any) -> JournalRecord:
    """``raw`` (a stored record) checked field by field and for its shape; RecordInvalid says why."""
    if type(raw) is not dict:
        raise RecordInvalid("a record is not a JSON object")
    if not raw.keys() <= _FIELDS:
        raise RecordInvalid(f"unknown record fields: {', '.join(sorted(map(str, raw.keys() - _FIELDS)))}")
    get = raw.get
    version = get("schema_version", 1)
    if type(version) is not int or version != 1:
        _fail("schema_version", "is not 1")
    if get("kind", "journal_record") != "journal_record":
        _fail("kind", "is not journal_record")
    try:
        shash, seq, prev, event = raw["session_hash"], raw["sequence"], raw["prev_hash"], raw["event"]
        at, digest = raw["at"], raw["record_hash"]
    except KeyError as exc:
        raise RecordInvalid(f"record field {exc.args[0]} is missing") from None
    if type(shash) is not str or _HEX32(shash) is None:
        _fail("session_hash", "is not 32 hex digits")
    if type(seq) is not int or seq < 0:
        _fail("sequence", "is not an integer >= 0")
    if type(prev) is not str or _HEX64(prev) is None:
        _fail("prev_hash", "is not 64 hex digits")
    if type(digest) is not str or _HEX64(digest) is None:
        _fail("record_hash", "is not 64 hex digits")
    if type(event) is not str or event not in EVENTS:
        _fail("event", "is not a journal event")
    rec = JournalRecord(shash, seq, prev, event, parse_datetime(at, "at"), digest, *_optional(raw))
    _shape(rec)
    return rec


def _optional(raw: dict[str, Any]) -> tuple[Any, ...]:
    """The optional fields, each checked (``None``: absent), in :data:`_OPTIONAL`'s order."""
    txid, claim, intent, source_id, sha256, plan_id, etag, size, version_id, reason = map(raw.get, _OPTIONAL)
    if txid is not None and (type(txid) is not str or _ID(txid) is None):
        _fail("transaction_id", "is not a transaction id")
    if plan_id is not None and (type(plan_id) is not str or _ID(plan_id) is None):
        _fail("plan_id", "is not a plan id")
    if intent is not None and not _is_hex(intent, 64):
        _fail("intent_sha256", "is not 64 hex digits")
    if sha256 is not None and not _is_hex(sha256, 64):
        _fail("sha256", "is not 64 hex digits")
    if source_id is not None and type(source_id) is not str:
        _fail("source_id", "is not a string")
    for name, value, limit in (("etag", etag, 200), ("version_id", version_id, 1024),
                               ("reason", reason, 200)):
        if value is not None and (type(value) is not str or len(value) > limit):
            _fail(name, f"is not a string of at most {limit} characters")
    if size is not None and (type(size) is not int or size < 0):
        _fail("size", "is not an integer >= 0")
    return (txid, None if claim is None else _claim(claim), intent, source_id, sha256, plan_id, etag, size,
            version_id, reason)


def _shape(rec: JournalRecord) -> None:
    """The model's validator: which fields each event carries, in its words."""
    if rec.event in TX_EVENTS:
        if rec.transaction_id is None or rec.intent_sha256 is None:
            raise RecordInvalid(f"{rec.event} needs transaction_id and intent_sha256")
        if (rec.claim is None) != (rec.event != "PREPARED"):
            raise RecordInvalid("exactly the PREPARED record carries the claim")
        if rec.source_id is not None or rec.sha256 is not None or rec.plan_id is not None:
            raise RecordInvalid(f"{rec.event} names no artifact or plan")
        if rec.etag is not None or rec.size is not None or rec.version_id is not None:
            raise RecordInvalid(f"{rec.event} carries no object snapshot")
        return
    if rec.source_id is None or rec.sha256 is None or rec.plan_id is None:
        raise RecordInvalid(f"{rec.event} needs source_id, sha256 and plan_id")
    if rec.transaction_id is not None or rec.claim is not None or rec.intent_sha256 is not None:
        raise RecordInvalid(f"{rec.event} names no transaction")
    if rec.event != "CONDEMNED" and (rec.etag, rec.size, rec.version_id) != (None, None, None):
        raise RecordInvalid("only CONDEMNED carries an object snapshot")
    _source_id(rec.source_id)


def _claim(raw: Any) -> ArtifactRetentionClaim:
    """A PREPARED record's claim, checked as :class:`ArtifactRetentionClaim` checks it."""
    if type(raw) is not dict:
        raise RecordInvalid("record field claim is not an object")
    if not raw.keys() <= _CLAIM_FIELDS:
        unknown = ", ".join(sorted(map(str, raw.keys() - _CLAIM_FIELDS)))
        raise RecordInvalid(f"unknown claim fields: {unknown}")
    version = raw.get("schema_version", 1)
    _require(type(version) is int and version == 1, "claim.schema_version", "is not 1")
    _require(raw.get("kind", "artifact_retention_claim") == "artifact_retention_claim", "claim.kind",
             "is not artifact_retention_claim")
    if "source_id" not in raw or "sha256" not in raw:
        raise RecordInvalid("record field claim lacks source_id or sha256")
    source_id, count = raw["source_id"], raw.get("reference_count", 1)
    _require(type(source_id) is str, "claim.source_id", "is not a string")
    _source_id(source_id)
    _require(_is_hex(raw["sha256"], 64), "claim.sha256", "is not 64 hex digits")
    _require(type(count) is int and count >= 1, "claim.reference_count", "is not an integer >= 1")
    values: dict[str, Any] = dict(raw)
    if raw.get("retain_until") is not None:
        values["retain_until"] = parse_datetime(raw["retain_until"], "claim.retain_until")
    return constructed_claim(values)


#: The claim model's fields and defaults, in its order (what ``model_construct`` fills in).
_CLAIM_DEFAULTS: dict[str, Any] = {
    name: field.get_default() for name, field in ArtifactRetentionClaim.model_fields.items()
    if not field.is_required()}
_CLAIM_ORDER = tuple(ArtifactRetentionClaim.model_fields)
#: Only a model with no aliases, no post-init and no extras, as the claim is, is built by hand.
_BY_HAND = (ArtifactRetentionClaim.__pydantic_post_init__ is None
            and ArtifactRetentionClaim.model_config.get("extra") != "allow"
            and not any(f.alias or f.validation_alias for f in ArtifactRetentionClaim.model_fields.values())
            and frozenset(_CLAIM_ORDER) == _CLAIM_FIELDS)


def constructed_claim(values: dict[str, Any]) -> ArtifactRetentionClaim:
    """``ArtifactRetentionClaim.model_construct(**values)`` for values of the claim's own fields
    (checked by :func:`_claim`), built as it builds one, without its per-field alias lookups
    (three quarters of a PREPARED record's check; ``tests/leases/test_record_checks.py``
    compares the two). Unknown names are left out, as ``model_construct`` leaves them."""
    if not _BY_HAND:
        return ArtifactRetentionClaim.model_construct(**values)
    fields = {name: values[name] if name in values else _CLAIM_DEFAULTS[name]
              for name in _CLAIM_ORDER if name in values or name in _CLAIM_DEFAULTS}
    claim = ArtifactRetentionClaim.__new__(ArtifactRetentionClaim)
    object.__setattr__(claim, "__dict__", fields)
    object.__setattr__(claim, "__pydantic_fields_set__", {name for name in values if name in fields})
    object.__setattr__(claim, "__pydantic_extra__", None)
    object.__setattr__(claim, "__pydantic_private__", None)
    return claim


def _source_id(text: str) -> None:
    try:
        SourceId.parse(text)
    except S3SpillError as exc:
        raise RecordInvalid(f"the record's source id does not parse: {exc}") from None


def parse_datetime(value: object, name: str) -> datetime:
    """A stored date in the form our writer writes (see the module docstring)."""
    if type(value) is not str or _DATETIME(value) is None:
        raise RecordInvalid(f"record field {name} is not an ISO 8601 date and time")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise RecordInvalid(f"record field {name} is not a valid date and time") from None


def _fail(name: str, what: str) -> NoReturn:
    raise RecordInvalid(f"record field {name} {what}")


def _require(ok: bool, name: str, what: str) -> None:
    if not ok:
        _fail(name, what)


def _is_hex(value: object, n: int) -> bool:
    return type(value) is str and (_HEX32 if n == 32 else _HEX64)(value) is not None
