"""GC at scale: the plan reads what a listing lacks only where a decision needs it, and a
shard lists only its own range of the key space."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.errors import CleanupRefused, StoreError
from s3spill.gc.apply import apply_cleanup
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import CleanupPolicy, CleanupScope, hash_bounds
from s3spill.gc.plan import plan_cleanup
from s3spill.leases.journal import LeaseJournal
from s3spill.models import ArtifactRetentionClaim
from s3spill.store.base import ObjectInfo, ObjectStore
from s3spill.store.local import LocalStore
from s3spill.store.s3.store import S3Store
from s3spill.testing import Fault, FaultyStore, record_operations
from tests.gc.aged_artifacts import later, put_artifact

REAL = CleanupPolicy(dry_run=False, max_deletions=None)


def _fleet(store: ObjectStore, sessions: int, per_session: int) -> tuple[set[str], set[str]]:
    """Artifacts as the artifact store writes them; every third one referenced. (orphans, kept)."""
    artifacts = ArtifactStore(store)
    orphans: set[str] = set()
    kept: set[str] = set()
    for s in range(sessions):
        journal = LeaseJournal(store, f"fleet-{s}")
        for j in range(per_session):
            ref = artifacts.write(f"fleet-{s}", f"session {s} output {j}\n".encode() * 30, "bash")
            if j % 3 == 0:
                claim = ArtifactRetentionClaim(source_id=ref.source_id, sha256=ref.sha256)
                journal.publish_reference(claim, lambda: None, transaction_id=f"tx-{s}-{j}")
                kept.add(ref.name)
            else:
                orphans.add(ref.name)
    return orphans, kept


class _HeadLog(MeteredStore):
    """Remembers the key of every HEAD."""

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner)
        self.heads: list[str] = []

    def head(self, key: str) -> ObjectInfo:
        self.heads.append(key)
        return super().head(key)


def test_plan_sends_no_head_per_artifact(moto_store: S3Store, tmp_path: Path) -> None:
    """On S3, planning artifacts the artifact store wrote HEADs no artifact (only each session's
    manifest): a candidate's digest comes from one GET of its commit record; apply deletes them all."""
    orphans, kept = _fleet(moto_store, sessions=3, per_session=6)
    sent = record_operations(moto_store.client)
    meter = _HeadLog(moto_store)
    plan = plan_cleanup(meter, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())
    assert sorted(meter.heads) == sorted(keys.manifest_key(keys.session_hash(f"fleet-{s}")) for s in range(3))
    assert sent.count("HeadObject") == 3
    statuses = {e.name: e.status for e in plan.entries() if e.object_kind == "artifact"}
    assert statuses == {**{n: "planned_delete" for n in orphans}, **{n: "retained_referenced" for n in kept}}
    for e in plan.entries():
        if e.status == "planned_delete":
            assert e.snapshot is not None and e.snapshot.sha256 is not None
    report = apply_cleanup(moto_store, plan, now=later)
    assert report.counts.get("deleted") == len(orphans)
    remaining = {keys.parse_key(i.key).name for i in moto_store.list("v1/sessions/")
                 if keys.parse_key(i.key).kind == "artifact"}
    assert remaining == kept


@pytest.mark.parametrize("keyed", [True, False])
def test_apply_revalidates_committed_artifacts_by_one_listing(
        moto_store: S3Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keyed: bool) -> None:
    """Apply HEADs no artifact whose digest the plan read from its commit record: one listing
    after the condemnation gives ETag, size and age, and If-Match proves the rest. A plan
    with a MAC costs one delete per object plus a fixed handful per session; one without
    adds one GET of each commit record, to check the digest the fence was keyed by."""
    if keyed:
        monkeypatch.setenv("S3SPILL_PLAN_KEY", "a-test-secret-of-32-characters!!")
    orphans, _ = _fleet(moto_store, sessions=2, per_session=9)
    plan = plan_cleanup(moto_store, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())
    assert all(e.snapshot is not None and e.snapshot.committed for e in plan.entries()
               if e.status == "planned_delete")
    meter = _HeadLog(moto_store)
    report = apply_cleanup(moto_store, plan, now=later, metered=meter)
    assert report.counts.get("deleted") == len(orphans)
    assert not [k for k in meter.heads if "/artifacts/" in k]
    assert report.requests["delete_if_match"] == 2 * len(orphans)
    others = sum(report.requests.values()) - report.requests["delete_if_match"]
    record_gets = 0 if keyed else len(orphans)
    assert others - record_gets <= 2 * 12, report.requests


@pytest.mark.parametrize("committed", [True, False])
def test_unauthenticated_plan_with_another_digest_deletes_nothing(
        store: ObjectStore, tmp_path: Path, committed: bool) -> None:
    """A plan file edited to condemn a committed artifact under another digest (footer digest
    recomputed, no MAC; revalidated by listing or, with the flag edited too, by HEAD) is
    caught by the commit record: race_detected, the artifact stays."""
    from tests.gc.test_safety import forge

    ref = ArtifactStore(store).write("s1", b"committed output\n" * 20, "bash")
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())

    def other_digest(lines: list[dict[str, Any]]) -> None:
        for doc in lines:
            if doc.get("status") == "planned_delete":
                doc["snapshot"]["sha256"] = "0" * 64
                doc["snapshot"]["committed"] = committed

    forged = forge(plan.path, tmp_path / "forged.jsonl", other_digest)
    report = apply_cleanup(store, forged, now=later)
    assert report.counts == {"race_detected": 1}
    assert ArtifactStore(store, session_id="s1").read_page(ref.source_id).total_lines == 20


class _ReplaceBeforeDelete(MeteredStore):
    """Overwrites an artifact body just before apply's conditional delete of it reaches the store."""

    def __init__(self, inner: ObjectStore, victim: str) -> None:
        super().__init__(inner)
        self.victim = victim

    def delete_if_match(self, key: str, etag: str) -> None:
        if key == self.victim:
            self.inner.put_if_match(key, b"replaced after the listing", self.inner.head(key).etag)
        super().delete_if_match(key, etag)


def test_body_replaced_after_the_listing_is_not_deleted(store: ObjectStore, tmp_path: Path) -> None:
    """A body replaced between apply's listing and its delete fails If-Match: race_detected,
    the new body stays, and the condemnation is lifted."""
    ref = ArtifactStore(store).write("s1", b"condemned output\n" * 20, "bash")
    key = keys.artifact_key(ref.session_hash, ref.name)
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())
    report = apply_cleanup(store, plan, now=later, metered=_ReplaceBeforeDelete(store, key))
    assert report.counts == {"race_detected": 1}
    assert store.get(key) == b"replaced after the listing"
    assert LeaseJournal(store, "s1").view().condemned == ()


class _ReplaceBeforeBatch(MeteredStore):
    """Overwrites one artifact body just before apply's batch of conditional deletes reaches the store."""

    def __init__(self, inner: ObjectStore, victim: str) -> None:
        super().__init__(inner)
        self.victim = victim
        self.batches: list[list[str]] = []

    def delete_many_if_match(self, items: Sequence[tuple[str, str]]) -> dict[str, StoreError | None]:
        self.batches.append([key for key, _ in items])
        if any(key == self.victim for key, _ in items):
            current = self.inner.head(self.victim).etag
            self.inner.put_if_match(self.victim, b"replaced after the listing", current)
        return super().delete_many_if_match(items)


def test_a_batch_of_deletes_reports_each_race_on_its_own(local_store: LocalStore, tmp_path: Path) -> None:
    """The bodies go in one batch of conditional deletes, then their sidecars: the one replaced
    in between is race_detected (kept, with its sidecar, condemnation lifted), the others deleted."""
    refs = [ArtifactStore(local_store).write("s1", f"output {i}\n".encode() * 20, "bash") for i in range(3)]
    victim = keys.artifact_key(refs[1].session_hash, refs[1].name)
    plan = plan_cleanup(local_store, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())
    meter = _ReplaceBeforeBatch(local_store, victim)
    report = apply_cleanup(local_store, plan, now=later, metered=meter)
    assert report.counts == {"race_detected": 1, "deleted": 2}
    bodies = sorted(keys.artifact_key(r.session_hash, r.name) for r in refs)
    assert [sorted(b) for b in meter.batches] == [bodies, sorted(k + ".idx" for k in bodies if k != victim)]
    left = sorted(i.key for i in local_store.list(keys.session_prefix(refs[0].session_hash) + "artifacts/"))
    assert left == [victim, victim + ".idx"]
    assert local_store.get(victim) == b"replaced after the listing"
    assert LeaseJournal(local_store, "s1").view().condemned == ()


def test_commit_record_naming_another_body_costs_a_head(moto_store: S3Store, tmp_path: Path) -> None:
    """A body overwritten after its commit record no longer matches the ETag the record pins:
    the plan does not trust the record's digest but HEADs the body and takes the body's own."""
    ref = ArtifactStore(moto_store).write("s1", b"committed output\n" * 20, "bash")
    key = keys.artifact_key(ref.session_hash, ref.name)
    moto_store.put_if_match(key, b"rogue bytes", moto_store.head(key).etag)
    meter = _HeadLog(moto_store)
    plan = plan_cleanup(meter, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())
    assert sorted(meter.heads) == sorted([keys.manifest_key(ref.session_hash), key])
    (entry,) = [e for e in plan.entries() if e.object_kind == "artifact"]
    assert entry.snapshot is not None and entry.snapshot.sha256 == moto_store.head(key).sha256
    assert entry.snapshot.sha256 != ref.sha256


def test_damaged_commit_record_at_apply_keeps_that_artifact_only(local_store: LocalStore,
                                                                 tmp_path: Path) -> None:
    """A commit record damaged after the plan (its trailer's SHA-256 no longer matches) keeps
    its artifact (retained_error, condemnation lifted); the session's other artifacts go."""
    refs = [ArtifactStore(local_store).write("s1", f"output {i}\n".encode() * 20, "bash") for i in range(3)]
    plan = plan_cleanup(local_store, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())
    damaged = local_store.root / "objects" / keys.index_key(refs[1].session_hash, refs[1].name)
    raw = bytearray(damaged.read_bytes())
    raw[5] ^= 1
    damaged.write_bytes(bytes(raw))
    report = apply_cleanup(local_store, plan, now=later)
    assert report.counts == {"deleted": 2, "retained_error": 1}
    left = [i.key for i in local_store.list(keys.session_prefix(refs[0].session_hash) + "artifacts/")]
    assert left == [keys.artifact_key(refs[1].session_hash, refs[1].name),
                    keys.index_key(refs[1].session_hash, refs[1].name)]
    assert LeaseJournal(local_store, "s1").view().condemned == ()


def test_unreadable_commit_record_at_apply_keeps_the_artifact(store: ObjectStore, tmp_path: Path) -> None:
    """When the commit record cannot be read to check an unauthenticated plan's digest, nothing
    is deleted: retained_error, and the condemnation is lifted (the delete was never sent)."""
    ref = ArtifactStore(store).write("s1", b"committed output\n" * 20, "bash")
    plan = plan_cleanup(store, CleanupScope(), REAL, out=tmp_path / "p.jsonl", now=later())
    faulty = FaultyStore(store, [Fault("get", "unavailable", times=5,
                                       key_prefix=keys.index_key(ref.session_hash, ref.name))])
    report = apply_cleanup(faulty, plan, now=later)
    assert report.counts == {"retained_error": 1}
    assert ArtifactStore(store, session_id="s1").read_page(ref.source_id).total_lines == 20
    assert LeaseJournal(store, "s1").view().condemned == ()


def _edge_keys(count: int) -> list[str]:
    """Off-layout keys at the edges of the shard ranges and around the hashed prefixes."""
    out = ["0first/x", "v1/gc/plans/x.jsonl", "v1/owner0", "v1/owner-", "v1/sessions-x",
           "v1/sessions/notahash/x", "v1/sessions/A/x", "v1/sessions/0-/x", "zzz/top"]
    for k in range(1, count):
        lo, _ = hash_bounds(k, count)
        out.append(f"v1/sessions/{lo:08x}")
        out.append(f"v1/owner/{lo:08x}")
    return out


def _populate_for_shards(store: ObjectStore) -> None:
    for i in range(12):
        name = put_artifact(store, f"shard-{i}", f"body {i}".encode())
        if i % 4 == 0:
            sha = store.head(keys.artifact_key(keys.session_hash(f"shard-{i}"), name)).sha256
            assert sha is not None
            claim = ArtifactRetentionClaim(
                source_id=str(keys.SourceId(keys.session_hash(f"shard-{i}"), name, sha[:16])), sha256=sha)
            LeaseJournal(store, f"shard-{i}").publish_reference(claim, lambda: None, transaction_id=f"t{i}")
    stray_session = keys.session_hash("shard-1")
    store.put_if_absent(f"v1/owner/{stray_session}/junk", b"j")
    store.put_if_absent(f"v1/sessions/{stray_session}/weird", b"w")
    for key in {k for n in (2, 3, 5) for k in _edge_keys(n)}:
        store.put_if_absent(key, b"edge")


def _entries(plan: Any) -> list[tuple[str, str, str]]:
    return [(e.key or f"claim:{e.name}", e.status, e.model_dump_json()) for e in plan.entries()]


def test_shards_partition_the_store_exactly(store: ObjectStore, tmp_path: Path) -> None:
    """For N = 2, 3, 5 the shards' plans together are the unsharded plan, entry for entry, and
    no object is in two shards, off-layout keys at the range edges included."""
    _populate_for_shards(store)
    now = later()
    whole = _entries(plan_cleanup(store, CleanupScope(), out=tmp_path / "all", now=now))
    listed = sorted(info.key for info in store.list())
    covered = sorted([k for k, _, _ in whole if not k.startswith("claim:")]
                     + [e.index_snapshot.key for e in plan_cleanup(
                         store, CleanupScope(), out=tmp_path / "again", now=now).entries()
                        if e.index_snapshot])
    assert covered == listed
    for n in (2, 3, 5):
        parts: list[tuple[str, str, str]] = []
        for k in range(n):
            shard = plan_cleanup(store, CleanupScope(shard_index=k, shard_count=n),
                                 out=tmp_path / f"{n}-{k}", now=now)
            parts += _entries(shard)
        assert len({key for key, _, _ in parts}) == len(parts), f"an object in two shards (N={n})"
        assert sorted((key, status) for key, status, _ in parts) == sorted(
            (key, status) for key, status, _ in whole), f"N={n}"


class _CountingStore(MeteredStore):
    """Counts the objects a scope's range listings yield (a LIST page is 1,000 of them);
    the per-session listings of owner slots and segments are the plan's reads, not counted."""

    listed = 0

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self._count(prefix, super().list(prefix))

    def list_after(self, prefix: str, start_after: str) -> Iterator[ObjectInfo]:
        return self._count(prefix, super().list_after(prefix, start_after))

    def _count(self, prefix: str, listing: Iterator[ObjectInfo]) -> Iterator[ObjectInfo]:
        for info in listing:
            if prefix in ("", f"{keys.OWNER}/", f"{keys.SESSIONS}/"):
                self.listed += 1
            yield info


def test_each_shard_lists_only_its_own_range(store: ObjectStore, tmp_path: Path) -> None:
    """Summed over N shards, the store lists each object once (plus one per range end it
    reads past): N shards together pay one listing, not N."""
    _populate_for_shards(store)
    total = sum(1 for _ in store.list())
    for n in (1, 4, 16):
        listed = 0
        for k in range(n):
            meter = _CountingStore(store)
            plan_cleanup(meter, CleanupScope(shard_index=k, shard_count=n), out=tmp_path / f"{n}-{k}",
                         now=later())
            listed += meter.listed
        assert total <= listed <= total + 4 * n, f"N={n}: {listed} listed for {total} objects"


class _Unordered(MeteredStore):
    """A listing that is not in key order (as no real backend lists)."""

    def _pages(self, listing: Iterator[ObjectInfo]) -> Iterator[ObjectInfo]:
        return iter(sorted(listing, key=lambda info: info.key, reverse=True))


def test_listing_out_of_key_order_is_refused(local_store: ObjectStore, tmp_path: Path) -> None:
    """A listing out of key order could split a session in two: the plan is refused, not half-trusted."""
    put_artifact(local_store, "a", b"x")
    put_artifact(local_store, "b", b"y")
    with pytest.raises(CleanupRefused, match="key order"):
        plan_cleanup(_Unordered(local_store), CleanupScope(), out=tmp_path / "p", now=later())
