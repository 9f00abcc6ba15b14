"""The plan file: its lines (header, entries, footer), writing it and reading it back.

A plan is JSON Lines, written and read with bounded memory.

Why a footer with a digest: a plan is applied later, maybe by another process on
another host, and a plan cut short by a full disk or a killed copy must not be read
as "these are all the objects". The writer hashes every line as it goes; the reader
checks the whole file (one streaming pass) before it yields the first entry, so a
truncated, damaged or foreign plan is refused whole (:class:`CleanupRefused`).

A digest anyone can recompute does not stop a deliberate edit. With a key in
``S3SPILL_PLAN_KEY`` the footer also carries an HMAC-SHA256 of the digest, and a plan
whose MAC is missing or wrong is refused. Either way apply treats a plan only as a
narrowing hint and re-derives every deletion (see :mod:`s3spill.gc.apply`), so an
edited plan can at most make GC delete less.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Literal

import orjson
from pydantic import Field, ValidationError, model_validator

from s3spill.errors import CleanupRefused, ConfigError, InvalidRequest, NotFound
from s3spill.gc.models import CleanupPolicy, CleanupScope, ObjectKind, ObjectSnapshot, PlanStatus
from s3spill.keys import gc_plan_key
from s3spill.models import Record
from s3spill.store.base import ObjectStore

PLAN_KEY_ENV = "S3SPILL_PLAN_KEY"


class PlanHeader(Record):
    """First line of a plan: what was planned, where, under which policy."""

    kind: Literal["cleanup_plan_header"] = "cleanup_plan_header"
    plan_id: str = Field(pattern=r"^[0-9A-Za-z_-]{8,64}$")
    created_at: datetime
    store_url: str
    scope: CleanupScope
    policy: CleanupPolicy


class PlanEntry(Record):
    """One object (or one dangling claim) and the single status the plan gave it."""

    kind: Literal["cleanup_plan_entry"] = "cleanup_plan_entry"
    status: PlanStatus
    object_kind: ObjectKind
    session_hash: str | None = None
    name: str | None = None
    key: str | None = None
    size: int = Field(default=0, ge=0)
    reason: str = ""
    #: Required for ``planned_delete``: what apply must find before deleting.
    snapshot: ObjectSnapshot | None = None
    #: The artifact's ``.idx`` sidecar, deleted with it (``None`` if it has none).
    index_snapshot: ObjectSnapshot | None = None

    @model_validator(mode="after")
    def _planned_has_snapshot(self) -> PlanEntry:
        if self.status == "planned_delete":
            if self.snapshot is None or self.session_hash is None or self.name is None:
                raise ValueError("a planned_delete entry needs a snapshot, a session and a name")
            if self.object_kind == "artifact" and self.snapshot.sha256 is None:
                raise ValueError("a planned artifact deletion needs the artifact's SHA-256")
        return self


class PlanFooter(Record):
    """Last line: the entry count and a SHA-256 over every line before it (truncation check)."""

    kind: Literal["cleanup_plan_footer"] = "cleanup_plan_footer"
    plan_id: str
    entries: int = Field(ge=0)
    counts: dict[str, int]
    bytes: dict[str, int]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    #: HMAC-SHA256 of the digest under ``S3SPILL_PLAN_KEY`` (``None``: an unkeyed plan,
    #: whose digest proves only that it is complete, not who wrote it).
    mac: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")


_HEX64 = re.compile(r"[0-9a-f]{64}").fullmatch


def snapshot_json(key: str, etag: str, version_id: str | None, size: int, last_modified: datetime,
                  sha256: str | None, committed: bool) -> dict[str, Any]:
    """An :class:`ObjectSnapshot` as its ``model_dump()`` gives it, checked as the model checks it.

    Why not the model: the planner writes one or two snapshots per listed object, and
    building, validating and dumping the models was a fifth of a local plan's CPU (issue 35).
    The JSON line is byte for byte the model's (``tests/gc/test_plan_lines.py``), and apply
    reads every line back through :class:`PlanEntry` as before.
    """
    if (type(key) is not str or type(etag) is not str or type(size) is not int or size < 0
            or not isinstance(last_modified, datetime)
            or (version_id is not None and type(version_id) is not str)
            or (sha256 is not None and (type(sha256) is not str or not _HEX64(sha256)))):
        # the model's own error, for whatever it refuses
        ObjectSnapshot(key=key, etag=etag, version_id=version_id, size=size, last_modified=last_modified,
                       sha256=sha256, committed=committed)
        raise ValueError(f"not a valid object snapshot: {key!r}")
    return {"schema_version": 1, "kind": "object_snapshot", "key": key, "etag": etag,
            "version_id": version_id, "size": size, "last_modified": last_modified, "sha256": sha256,
            "committed": committed}


class PlanLine:
    """A plan entry as the planner writes it: :class:`PlanEntry`'s fields, in its order, as
    plain values (see :func:`snapshot_json`); :meth:`PlanWriter.add` dumps it with orjson."""

    __slots__ = ("data", "size", "status")

    def __init__(self, status: PlanStatus, object_kind: ObjectKind, session_hash: str | None,
                 name: str | None, key: str | None, size: int, reason: str,
                 snapshot: dict[str, Any] | None, index_snapshot: dict[str, Any] | None) -> None:
        if type(size) is not int or size < 0:
            raise ValueError(f"plan entry size {size!r} is not a size")
        if status == "planned_delete" and (
                snapshot is None or session_hash is None or name is None
                or (object_kind == "artifact" and snapshot["sha256"] is None)):
            raise ValueError("a planned_delete entry needs a snapshot, a session and a name"
                             " (and an artifact its SHA-256)")
        self.status = status
        self.size = size
        self.data: dict[str, Any] = {
            "schema_version": 1, "kind": "cleanup_plan_entry", "status": status,
            "object_kind": object_kind, "session_hash": session_hash, "name": name, "key": key,
            "size": size, "reason": reason, "snapshot": snapshot, "index_snapshot": index_snapshot}

    def limited(self, reason: str) -> PlanLine:
        """This line held back by ``max_deletions``: ``retained_limit``, no snapshot."""
        d = self.data
        return PlanLine("retained_limit", d["object_kind"], d["session_hash"], d["name"], d["key"],
                        self.size, reason, None, d["index_snapshot"])

    def entry(self) -> PlanEntry:
        """The validated model of this line (what apply reads back)."""
        return PlanEntry.model_validate_json(self.dump())

    def dump(self) -> bytes:
        return orjson.dumps(self.data, option=orjson.OPT_UTC_Z)


def plan_key() -> bytes | None:
    """The plan-authentication key from ``S3SPILL_PLAN_KEY`` (``None`` when unset)."""
    raw = os.environ.get(PLAN_KEY_ENV)
    if not raw:
        return None
    if len(raw) < 16:
        raise ConfigError(f"{PLAN_KEY_ENV} must be at least 16 characters (use a random secret)")
    return raw.encode()


def plan_mac(key: bytes, digest_hex: str, plan_id: str, entries: int) -> str:
    """HMAC-SHA256 over the plan's line digest, id and entry count."""
    msg = f"s3spill-plan\0{plan_id}\0{entries}\0{digest_hex}".encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


class PlanWriter:
    """Appends plan lines to a file, keeping only the running counts and digest in memory."""

    def __init__(self, path: str | os.PathLike[str], header: PlanHeader) -> None:
        self.path = Path(path)
        self.header = header
        self._digest = hashlib.sha256()
        self.counts: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.entries = 0
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._fh: IO[bytes] = os.fdopen(fd, "wb")
        self._line(header.model_dump_json())

    def _line(self, text: str) -> None:
        raw = text.encode() + b"\n"
        self._digest.update(raw)
        self._fh.write(raw)

    def add(self, entry: PlanEntry | PlanLine) -> None:
        if isinstance(entry, PlanLine):
            raw = entry.dump() + b"\n"
            self._digest.update(raw)
            self._fh.write(raw)
        else:
            self._line(entry.model_dump_json(exclude_defaults=False))
        self.entries += 1
        self.counts[entry.status] += 1
        self.bytes[entry.status] += entry.size

    def close(self) -> CleanupPlan:
        digest = self._digest.hexdigest()
        key = plan_key()
        footer = PlanFooter(
            plan_id=self.header.plan_id, entries=self.entries, counts=dict(self.counts),
            bytes=dict(self.bytes), sha256=digest,
            mac=plan_mac(key, digest, self.header.plan_id, self.entries) if key else None,
        )
        self._fh.write(footer.model_dump_json().encode() + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        return CleanupPlan(self.path, self.header, footer)

    def abort(self) -> None:
        self._fh.close()


class CleanupPlan:
    """A verified plan on local disk: header, footer, and a streaming entry iterator."""

    def __init__(self, path: Path, header: PlanHeader, footer: PlanFooter) -> None:
        self.path = path
        self.header = header
        self.footer = footer
        #: Sessions planned, when this process made the plan (not stored in the file).
        self.sessions: int | None = None

    @property
    def plan_id(self) -> str:
        return self.header.plan_id

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> CleanupPlan:
        """Verify the whole file (count, digest, ids) and return a handle; refuse anything off."""
        path = Path(path)
        header, footer, entries, digest = _scan(path)
        if header is None or footer is None:
            raise CleanupRefused(f"plan {path.name} is incomplete (no header or no footer)")
        if footer.plan_id != header.plan_id or footer.entries != entries:
            raise CleanupRefused(f"plan {path.name}: footer does not match its entries")
        if footer.sha256 != digest:
            raise CleanupRefused(f"plan {path.name}: digest mismatch (edited or damaged)")
        _check_mac(path.name, footer)
        return cls(path, header, footer)

    def entries(self) -> Iterator[PlanEntry]:
        """Stream the entries again; the file was verified by :meth:`open`."""
        with open(self.path, "rb") as fh:
            next(fh)
            for raw in fh:
                if b'"cleanup_plan_footer"' in raw:
                    return
                yield PlanEntry.model_validate_json(raw)


def _scan(path: Path) -> tuple[PlanHeader | None, PlanFooter | None, int, str]:
    """One pass over the file: its header, its footer, the entries between them and the
    digest of every line but the footer; a line out of place or cut short is refused."""
    digest = hashlib.sha256()
    header: PlanHeader | None = None
    footer: PlanFooter | None = None
    entries = 0
    try:
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if footer is not None:
                    raise CleanupRefused(f"plan {path.name}: data after the footer (line {lineno})")
                if not raw.endswith(b"\n"):
                    raise CleanupRefused(f"plan {path.name}: truncated line {lineno}")
                if lineno == 1:
                    header = PlanHeader.model_validate_json(raw)
                    digest.update(raw)
                elif b'"cleanup_plan_footer"' in raw:
                    footer = PlanFooter.model_validate_json(raw)
                else:
                    digest.update(raw)
                    entries += 1
    except (ValidationError, ValueError) as exc:
        raise CleanupRefused(f"plan {path.name} is not a valid cleanup plan: {exc}") from None
    except FileNotFoundError:  # a mistyped path is a usage error, not a refusal
        raise InvalidRequest(f"plan file {path} does not exist",
                             hint="give the plan file `gc plan` printed, or store:PLAN_ID") from None
    return header, footer, entries, digest.hexdigest()


def _check_mac(name: str, footer: PlanFooter) -> None:
    """With a plan key set, the plan must carry a matching MAC; without one, it must carry
    none (an authenticated plan that cannot be checked is refused, not trusted)."""
    key = plan_key()
    if key is not None:
        if footer.mac is None:
            raise CleanupRefused(f"plan {name} carries no MAC but {PLAN_KEY_ENV} is set: "
                                 "refusing an unauthenticated plan")
        expected = plan_mac(key, footer.sha256, footer.plan_id, footer.entries)
        if not hmac.compare_digest(expected, footer.mac):
            raise CleanupRefused(f"plan {name}: MAC mismatch (edited, or made with another key)")
    elif footer.mac is not None:
        raise CleanupRefused(f"plan {name} is authenticated but {PLAN_KEY_ENV} is not set: "
                             "cannot check it")


def save_plan_to_store(store: ObjectStore, plan: CleanupPlan) -> str:
    """Upload a verified plan create-once; returns its key relative to the store root."""
    key = gc_plan_key(plan.plan_id)
    with open(plan.path, "rb") as fh:
        store.put_if_absent(key, fh, content_type="application/x-ndjson")
    return key


def load_plan_from_store(store: ObjectStore, plan_id: str, directory: str | None = None) -> CleanupPlan:
    """Download a plan to a private temporary file (streamed) and verify it."""
    key = gc_plan_key(plan_id)
    fd, name = tempfile.mkstemp(prefix="s3spill-plan-", suffix=".jsonl", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in store.iter_chunks(key):
                fh.write(chunk)
    except NotFound:
        os.unlink(name)
        raise InvalidRequest(f"no plan {plan_id} in the store",
                             hint="give the plan id `gc plan --out store` printed") from None
    return CleanupPlan.open(name)
