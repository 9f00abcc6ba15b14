"""The journal record's hand checks refuse every record the pydantic model refused, read the others
alike, and the writer's records (so the hash chain) are byte for byte what the model wrote."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from s3spill import keys
from s3spill.errors import S3SpillError
from s3spill.keys import SourceId
from s3spill.leases import cas
from s3spill.leases.condemnation import CondemnItem
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.journal_format import canonical_json, claim_json, compute_record_hash, intent_hash
from s3spill.leases.journal_record import (
    JournalRecord,
    RecordInvalid,
    check_record,
    iso_datetime,
    new_record,
    parse_datetime,
)
from s3spill.models import ArtifactRetentionClaim
from s3spill.store.base import ObjectStore
from tests.examples import examples
from tests.leases.journal_artifacts import JCFG, SESSION, put_artifact
from tests.leases.old_record_model import OldJournalRecord, old_build_record

SHASH = keys.session_hash(SESSION)
OTHER = keys.session_hash("another-session")
NAME = "20261202T031335Z-0123456789ab-bash"
SID = str(SourceId(SHASH, NAME, "0123456789abcdef"))
AT = datetime(2026, 12, 2, 3, 13, 35, 171927, tzinfo=UTC)
CLAIM = ArtifactRetentionClaim(source_id=SID, sha256="0123456789abcdef" * 4, reference_count=2,
                               retain_until=AT + timedelta(days=3))
INTENT = intent_hash(claim_json(CLAIM))
SPECS: list[dict[str, Any]] = [
    {"event": "PREPARED", "transaction_id": "tx-1", "claim": CLAIM, "intent_sha256": INTENT},
    {"event": "PREPARED", "transaction_id": "tx-2", "claim": ArtifactRetentionClaim(
        source_id=SID, sha256="f" * 64), "intent_sha256": INTENT},
    {"event": "COMMITTED", "transaction_id": "tx-1", "intent_sha256": INTENT},
    {"event": "ABORTED", "transaction_id": "tx-1", "intent_sha256": INTENT, "reason": "publication_rejected"},
    {"event": "RELEASED", "transaction_id": "tx-1", "intent_sha256": INTENT},
    {"event": "CONDEMNED", "source_id": SID, "sha256": "a" * 64, "plan_id": "gc-run:1", "etag": '"e"',
     "size": 0, "version_id": "v1"},
    {"event": "CONDEMNED", "source_id": SID, "sha256": "a" * 64, "plan_id": "gc-run:1"},
    {"event": "DELETED", "source_id": SID, "sha256": "a" * 64, "plan_id": "gc-run:1"},
    {"event": "LIFTED", "source_id": SID, "sha256": "a" * 64, "plan_id": "gc-run:1",
     "reason": "race_detected"},
]
FIELDS = ["schema_version", "kind", "session_hash", "sequence", "prev_hash", "event", "at", "transaction_id",
          "claim", "intent_sha256", "source_id", "sha256", "plan_id", "etag", "size", "version_id", "reason",
          "record_hash", "unknown_field"]
CLAIM_FIELDS = ["schema_version", "kind", "source_id", "sha256", "reference_count", "retain_until", "extra"]
#: The JSON type each field's canonical value has (what our writer writes).
TYPES: dict[str, type] = {"schema_version": int, "sequence": int, "size": int, "reference_count": int,
                          "claim": dict}
DATES = ("at", "retain_until")
MISSING = object()
#: Values each field is set to in turn: every JSON type, bounds, near-miss digests, ids and dates.
VALUES: list[Any] = [
    MISSING, None, "", "x", 0, 1, 2, -1, True, False, 1.0, 1.5, "1", "0", 2**63, [], [1], {}, {"a": 1},
    "0" * 32, "0" * 31, "0" * 33, "A" * 32, "0" * 32 + "\n", "0" * 64, "f" * 64, "0" * 63 + "g", "F" * 64,
    "0" * 64 + "\n", " " + "0" * 63, SHASH, OTHER, "journal_record", "artifact_retention_claim",
    "PREPARED", "COMMITTED", "ABORTED", "RELEASED", "CONDEMNED", "DELETED", "LIFTED", "prepared", "OTHER",
    "2026-12-02T03:13:35Z", "2026-12-02T03:13:35.5+01:00", "2026-12-02T03:13:35",
    "2026-12-02T03:13:35.000001Z", "2026-13-02T03:13:35Z", "2026-02-30T03:13:35Z", "2026-12-02",
    "2026-12-02 03:13:35Z", "2026-12-02T03:13:35z", "2026-12-02T03:13:35.1234567Z",
    "2026-12-02T03:13:35+0100", "2026-12-02T24:00:00Z", "2026-12-02T03:13:60Z", "0000-12-02T03:13:35Z",
    "2026-12-02T03:13:35+24:00", "2026-12-02T03:13:35-23:59", "\u0662026-12-02T03:13:35Z",
    1700000000, "1700000000", "yesterday", "tx-1", "gc-run:1@host.x_y", "-tx", ".x", "a" * 128, "a" * 129,
    "a b", "tx-1\n", "tx/1", "x" * 200, "x" * 201, "x" * 1024, "x" * 1025, SID, SID + " ", SID.upper(),
    str(SourceId(OTHER, NAME, "0123456789abcdef")), "artifact:x",
    f"artifact:{SHASH}:bad name:0123456789abcdef", claim_json(CLAIM), {**claim_json(CLAIM), "extra": 1},
    {"source_id": SID}, INTENT,
]


def _base(spec: dict[str, Any]) -> dict[str, Any]:
    raw, _ = old_build_record(session_hash=SHASH, sequence=7, prev_hash="1" * 64, at=AT, **spec)
    return raw


def _old(raw: dict[str, Any]) -> OldJournalRecord | None:
    try:
        return OldJournalRecord.model_validate(raw)
    except (ValidationError, S3SpillError):  # the claim's and the shape's id parser raised its own error
        return None


def _new(raw: dict[str, Any]) -> JournalRecord | None:
    try:
        return check_record(raw)
    except RecordInvalid:
        return None


def _lax(name: str, value: object) -> bool:
    """Where the model's lax mode coerced and the hand checks are strict (our writer writes none of
    these): a value of another JSON type than the field's (``true`` or ``1.0`` for an integer or
    the schema version, ``"1"`` for an integer, a Unix time for a date), or a date in another form
    than the one pydantic writes (a date alone, a space, ``z``, nanoseconds, a ``+0100`` offset)."""
    if value is None:
        return False
    if type(value) is not TYPES.get(name, str):
        return True
    return name in DATES and isinstance(value, str) and _dated(value)


def _dated(value: str) -> bool:
    try:
        TypeAdapter(datetime).validate_python(value)
    except ValidationError:
        return False
    try:
        parse_datetime(value, "at")
    except RecordInvalid:
        return True
    return False


def _same(old: OldJournalRecord, new: JournalRecord) -> None:
    for name in OldJournalRecord.model_fields:
        if name in ("schema_version", "kind"):
            continue
        assert getattr(new, name) == getattr(old, name), name
        if name == "at":
            assert new.at.utcoffset() == old.at.utcoffset()
    if old.claim is not None:
        assert new.claim is not None
        assert new.claim.model_dump() == old.claim.model_dump()
        assert new.claim.retain_until is None or new.claim.retain_until.utcoffset() == \
            old.claim.retain_until.utcoffset()  # type: ignore[union-attr]


def _agree(raw: dict[str, Any], name: str, value: object) -> None:
    old, new = _old(raw), _new(raw)
    if old is None:
        assert new is None, (name, value)
    elif new is None:
        assert _lax(name, value), (name, value)
    else:
        _same(old, new)


def _set(raw: dict[str, Any], name: str, value: object) -> dict[str, Any]:
    out = dict(raw)
    if value is MISSING:
        out.pop(name, None)
    else:
        out[name] = value
    return out


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: str(s["event"]))
def test_every_record_the_model_refused_is_refused_and_the_others_read_alike(spec: dict[str, Any]) -> None:
    """Each field of each kind of record set to each value (or left out): refused where the model
    refused it, read to the same values where both accept, refused alone only where the model coerced."""
    base = _base(spec)
    assert _new(base) is not None
    for name in FIELDS:
        for value in VALUES:
            _agree(_set(base, name, value), name, value)


def test_every_claim_the_model_refused_is_refused() -> None:
    """The same for each field of a PREPARED record's claim."""
    base = _base(SPECS[0])
    for name in CLAIM_FIELDS:
        for value in VALUES:
            raw = {**base, "claim": _set(base["claim"], name, value)}
            _agree(raw, name, value)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: str(s["event"]))
@pytest.mark.parametrize("at", [AT, AT.replace(microsecond=0), AT.replace(tzinfo=None),
                                AT.astimezone(timezone(timedelta(hours=-5, minutes=-30))),
                                AT.replace(tzinfo=timezone(timedelta(seconds=37)))], ids=str)
def test_the_writer_writes_the_models_bytes_and_hash(spec: dict[str, Any], at: datetime) -> None:
    """A new record is the object the model dumped, key for key, so its canonical bytes and its
    hash, the chain's links, are unchanged; and the writer folds it as the model reads it back
    (with an offset of seconds, which pydantic does not write, the written time, not the given one)."""
    old_raw, _ = old_build_record(session_hash=SHASH, sequence=7, prev_hash="1" * 64, at=at, **spec)
    raw, rec = new_record(session_hash=SHASH, sequence=7, prev_hash="1" * 64, at=at, **spec)
    assert raw == old_raw
    assert canonical_json(raw) == canonical_json(old_raw)
    assert raw["record_hash"] == old_raw["record_hash"] == compute_record_hash(raw)
    _same(OldJournalRecord.model_validate(old_raw), rec)
    reread = check_record(raw)
    assert reread.record_hash == rec.record_hash and reread.at == rec.at


def test_the_writer_refuses_what_the_model_refused() -> None:
    """A record the writer is asked for with a bad field is refused before anything is hashed."""
    for bad in ({"plan_id": "bad plan"}, {"size": -1}, {"etag": "x" * 201}, {"transaction_id": "tx-1"},
                {"source_id": "artifact:x"}, {"unknown": 1}):
        spec = {**SPECS[5], **bad}
        with pytest.raises(ValidationError if "unknown" in bad else (ValidationError, S3SpillError)):
            old_build_record(session_hash=SHASH, sequence=7, prev_hash="1" * 64, at=AT, **spec)
        with pytest.raises(RecordInvalid):
            new_record(session_hash=SHASH, sequence=7, prev_hash="1" * 64, at=AT, **spec)


ZONES = st.one_of(st.none(), st.just(UTC), st.builds(
    lambda s: timezone(timedelta(seconds=s)), st.integers(-86399, 86399)))


@settings(max_examples=400, deadline=None)
@given(st.datetimes(timezones=ZONES))
def test_dates_are_written_as_pydantic_writes_them(value: datetime) -> None:
    """Any date and any zone (offsets with seconds too) is written as pydantic's JSON writes it."""
    assert iso_datetime(value) == TypeAdapter(datetime).dump_python(value, mode="json")


@settings(max_examples=examples(suite=100, thorough=400), deadline=None)
@given(st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
                     r"(Z|z|[+-][0-9]{2}:?[0-9]{2})?\Z") | st.text(max_size=40))
def test_a_date_read_is_one_pydantic_reads_alike(text: str) -> None:
    """A date the hand parser accepts, pydantic accepts too, as the same instant in the same zone."""
    try:
        ours = parse_datetime(text, "at")
    except RecordInvalid:
        return
    theirs = TypeAdapter(datetime).validate_python(text)
    assert ours == theirs and ours.utcoffset() == theirs.utcoffset()


def test_a_journal_the_old_writer_wrote_reads_and_takes_new_records(store: ObjectStore,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A journal whose records the model built (claims, GC's fence and finish, segments cut and
    merged) verifies in a fresh reader, and new records chain onto it."""
    monkeypatch.setattr(cas, "build_record", old_build_record)
    old = LeaseJournal(store, SESSION, JCFG)
    items = []
    for n in range(6):
        claim, _ = put_artifact(store)
        old.publish_reference(claim, lambda: None, f"tx-{n}")
        other, _ = put_artifact(store)
        items.append(CondemnItem(other.source_id, other.sha256, '"etag"', 64))
    old.release("tx-0")
    old.condemn_batch(items, "plan-old")
    old.finish_condemnations([i.source_id for i in items[:4]], [i.source_id for i in items[4:]], "plan-old")
    head = old.view().head_hash
    monkeypatch.undo()
    fresh = LeaseJournal(store, SESSION, JCFG)
    report = fresh.verify()
    assert report.head_hash == head and report.transactions == 6 and report.condemned == 0
    assert report.segments > 0
    claim, _ = put_artifact(store)
    fresh.publish_reference(claim, lambda: None, "tx-new")
    assert LeaseJournal(store, SESSION, JCFG).verify().live == 6


def test_a_record_is_hashed_over_its_stored_object() -> None:
    """The hash is the chain's: SHA-256 over the canonical JSON of the stored object (unchanged)."""
    raw = _base(SPECS[5])
    body = {k: v for k, v in raw.items() if k != "record_hash"}
    prefix = b"s3spill-journal-record\0"
    assert raw["record_hash"] == hashlib.sha256(prefix + canonical_json(body)).hexdigest()


@settings(max_examples=examples(suite=75, thorough=300), deadline=None)
@given(st.fixed_dictionaries(
    {"source_id": st.just(SID), "sha256": st.just("0123456789abcdef" * 4)},
    optional={"schema_version": st.just(1), "kind": st.just("artifact_retention_claim"),
              "reference_count": st.integers(1, 5),
              "retain_until": st.one_of(st.none(), st.datetimes(timezones=st.just(UTC)))}))
def test_a_claim_built_by_hand_is_the_one_model_construct_builds(values: dict[str, Any]) -> None:
    """The claim a record's check builds equals ``model_construct``'s: fields, fields set, dump and hash."""
    from s3spill.leases.journal_record import constructed_claim

    mine, theirs = constructed_claim(dict(values)), ArtifactRetentionClaim.model_construct(**values)
    assert mine == theirs
    assert mine.__dict__ == theirs.__dict__ and list(mine.__dict__) == list(theirs.__dict__)
    assert mine.model_fields_set == theirs.model_fields_set
    assert mine.model_dump_json() == theirs.model_dump_json()
    assert hash(mine) == hash(theirs)
    assert mine.__pydantic_extra__ is None and mine.__pydantic_private__ is None
