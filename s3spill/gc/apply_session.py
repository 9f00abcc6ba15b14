"""One session of ``apply_cleanup``: read its journal, refuse on doubt, admit each entry, fence, delete.

Split from :mod:`s3spill.gc.apply` (which runs the plan: policy, run lock, thread pool,
report) because this is where the per-session decisions live, each in its own step:
reading the facts (journal + the history outside it), spotting doubt (everything is
retained), adopting condemnations an interrupted run left behind, admitting each plan
line on fresh facts, and then one condemnation CAS followed by the conditional deletes
(:mod:`s3spill.gc.delete`) and one ``DELETED``/``LIFTED`` CAS. A purged session has no
journal and takes :mod:`s3spill.gc.erase_session` instead; every outcome goes to the run's
:class:`~s3spill.gc.tally.Tally`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from s3spill import failpoints
from s3spill.errors import IntegrityError, JournalError, NotFound, S3SpillError, StoreError
from s3spill.fleet.credit import QuotaCredit
from s3spill.gc.apply_checks import age_text, layout_ok, refusal
from s3spill.gc.delete import ConditionalDeleter
from s3spill.gc.erase_session import erase_session
from s3spill.gc.fence import (
    NO_MANIFEST_REASON,
    CondemnFact,
    GcLedger,
    LedgerFactory,
    SessionFacts,
    journal_doubts,
)
from s3spill.gc.key_cache import artifact_key, index_key
from s3spill.gc.metered_store import MeteredStore
from s3spill.gc.models import (
    ApplyOutcome,
    CleanupPolicy,
    DeleteMethod,
    ObjectSnapshot,
)
from s3spill.gc.plan_rules import object_created
from s3spill.gc.planfile import PlanEntry
from s3spill.gc.tally import Tally
from s3spill.gc.usage_logs import apply_usage_log
from s3spill.leases.evidence import HistoryEvidence, read_history_evidence
from s3spill.log import get_logger
from s3spill.store.base import ObjectInfo
from s3spill.store.commit import committed_digest, committed_digest_of

__all__ = ["FP_AFTER_CONDEMN", "FP_AFTER_DELETE", "SessionApplier"]

log = get_logger("s3spill.gc")

FP_AFTER_CONDEMN = failpoints.declare(
    "gc.after_condemn", "CONDEMNED is durable; nothing deleted yet")
FP_AFTER_DELETE = failpoints.declare(
    "gc.after_delete", "artifacts deleted; DELETED not yet appended")


class SessionApplier:
    """One session at a time: read its facts, refuse on doubt, admit each entry, condemn and delete."""

    def __init__(self, store: MeteredStore, policy: CleanupPolicy, method: DeleteMethod,
                 ledger_factory: LedgerFactory, run_id: str, now: Callable[[], datetime],
                 tally: Tally, dry_run: bool, planned_at: datetime | None = None, *,
                 authenticated_plan: bool = False) -> None:
        self.store = store
        self.planned_at = planned_at
        #: The plan's MAC was verified: its digests are the planner's, not an editor's.
        self.authenticated_plan = authenticated_plan
        self.policy = policy
        self.method = method
        self.ledger_factory = ledger_factory
        self.run_id = run_id
        self.now = now
        self.tally = tally
        self.dry_run = dry_run
        self.deleter = ConditionalDeleter(store, method, self._take_deletion_slot, policy.max_deletions)

    @property
    def active_within(self) -> timedelta:
        return max(self.policy.session_ttl, self.policy.orphan_ttl)

    # -- one session ---------------------------------------------------------------------

    def session(self, shash: str, entries: list[PlanEntry]) -> None:
        erase = [e for e in entries if e.status == "planned_erase"]
        if erase:
            erase_session(self.store, shash, [e for e in entries if e.status != "planned_erase"],
                          erase, self.tally, self.dry_run, self._take_deletion_slot,
                          self.policy.max_deletions)
            return
        planned = self._planned(entries)
        if not planned and not any(e.object_kind == "manifest" for e in entries):
            return  # owner slots or stray keys only: no journal to finish, nothing to delete
        with self.tally.lock:
            self.tally.sessions += 1
        if self.dry_run:
            for e in planned:
                self.tally.add("dry_run", e, "dry run: nothing deleted")
            return
        read = self._read_facts(shash, planned)
        if read is None or self._in_doubt(shash, planned, *read[1:]):
            return
        ledger, facts, evidence = read
        published = evidence.published_names()
        work = _leftover_condemnations(shash, facts, published)
        for e in planned:
            self._admit(shash, e, facts, published, work)
        if work:
            self._condemn_and_delete(ledger, shash, list(work.values()), facts)

    def _planned(self, entries: list[PlanEntry]) -> list[PlanEntry]:
        """The entries the plan wants deleted; every other one is tallied as the plan decided it."""
        for e in entries:
            if e.status != "planned_delete":
                self.tally.add(e.status, e)
        return [e for e in entries if e.status == "planned_delete"]

    def _read_facts(self, shash: str, planned: list[PlanEntry]
                    ) -> tuple[GcLedger, SessionFacts, HistoryEvidence] | None:
        """The journal's facts and the history outside it; ``None`` (all retained) if unreadable."""
        try:
            ledger = self.ledger_factory(self.store, shash, self.now)
            facts = ledger.facts()
            evidence = read_history_evidence(self.store, shash)
            if journal_doubts(facts, evidence):
                # Listed after the manifest was read: a publish in between is not lost history.
                facts = ledger.facts()
            return ledger, facts, evidence
        except (S3SpillError, ValueError) as exc:
            for e in planned:
                self.tally.add("retained_unverifiable", e, f"journal unusable: {type(exc).__name__}")
            return None

    def _in_doubt(self, shash: str, planned: list[PlanEntry], facts: SessionFacts,
                  evidence: HistoryEvidence) -> bool:
        """True (and everything retained) when the journal may not be the session's whole history."""
        doubts = journal_doubts(facts, evidence)
        if not facts.exists and not doubts and any(
                self._fresh_younger_than_session_ttl(shash, e) for e in planned):
            for e in planned:  # routine (a writer killed before its first mark): kept, no alarm
                self.tally.add("retained_no_manifest", e, NO_MANIFEST_REASON)
            return True
        if not doubts:
            return False
        log.warning("gc.apply.JOURNAL_DOUBT", session_hash=shash, reasons=doubts)
        reason = "journal in doubt: " + "; ".join(doubts)
        for e in planned:
            self.tally.add("retained_journal_doubt", e, reason)
        return True

    def _admit(self, shash: str, e: PlanEntry, facts: SessionFacts, published: dict[str, set[str]],
               work: dict[str, _Work]) -> None:
        """Decide one planned deletion on fresh facts: tally a refusal, or add it to ``work``."""
        assert e.snapshot is not None and e.name is not None
        if e.object_kind == "usage_log":
            return apply_usage_log(self, shash, e, facts)
        refused = refusal(shash, e, published)
        if refused is not None:
            self.tally.add(refused[0], e, refused[1])
            return
        if e.object_kind == "index":
            if facts.claims.get(e.name):
                self.tally.add("retained_referenced", e, "a claim names its artifact")
            else:
                self._orphan_index(shash, e, facts)
            return
        protected = None if e.name in work else self._protected(facts, e.name)
        if protected:
            self.tally.add(protected[0], e, protected[1])
            return
        assert e.snapshot.sha256 is not None
        fact = CondemnFact(name=e.name, sha256=e.snapshot.sha256, run_id=self.run_id,
                           etag=e.snapshot.etag, size=e.snapshot.size, version_id=e.snapshot.version_id)
        previous = work.get(e.name)
        if previous is not None and previous.fact.sha256 != fact.sha256:
            self.tally.add("race_detected", e, "condemned earlier with another digest")
            return
        work[e.name] = _Work(e.name, fact, e.index_snapshot, e,
                             takeover=previous.takeover if previous else None)

    def _protected(self, facts: SessionFacts, name: str) -> tuple[ApplyOutcome, str] | None:
        if facts.claims.get(name):
            return "retained_referenced", "a claim appeared after the plan"
        if facts.last_active is not None and self.now() - facts.last_active < self.active_within:
            age = age_text(self.now() - facts.last_active)
            if self.planned_at is not None and facts.last_active > self.planned_at:
                return "retained_recent", f"session active since the plan (last active {age} ago)"
            if self.now() - facts.last_active < self.policy.session_ttl:
                return "retained_recent", (f"session last active {age} ago, within the apply-time "
                                           f"session_ttl {age_text(self.policy.session_ttl)}")
            return "retained_recent", (f"session last active {age} ago, within the apply-time "
                                       f"orphan_ttl {age_text(self.policy.orphan_ttl)} after it")
        return None

    def _fresh_younger_than_session_ttl(self, shash: str, e: PlanEntry) -> bool:
        """Judged on a fresh HEAD, never on the plan's snapshot (which could be edited)."""
        assert e.name is not None
        if e.object_kind not in ("artifact", "index") or not layout_ok(shash, e.name):
            return False
        key = (artifact_key(shash, e.name) if e.object_kind == "artifact"
               else index_key(shash, e.name))
        try:
            head = self.store.head(key)
        except NotFound:
            return False
        except StoreError:
            return True  # cannot tell: doubt
        return self.now() - object_created(e.name, head) < self.policy.session_ttl

    def _young(self, facts: SessionFacts, name: str) -> Callable[[ObjectInfo], str | None]:
        """The plan's age rule, re-applied at apply time under the apply-time policy."""

        def check(head: ObjectInfo) -> str | None:
            now = self.now()
            ref = object_created(name, head)
            if facts.last_active is not None:
                if now - facts.last_active < self.policy.session_ttl:
                    return (f"session last active {age_text(now - facts.last_active)} ago, within the "
                            f"apply-time session_ttl {age_text(self.policy.session_ttl)}")
                ref = max(ref, facts.last_active)
            for claim in facts.expired_claims.get(name, ()):
                if claim.retain_until is not None:
                    ref = max(ref, claim.retain_until)
            if now - ref < self.policy.orphan_ttl:
                return (f"{age_text(now - ref)} old, younger than the apply-time orphan_ttl "
                        f"{age_text(self.policy.orphan_ttl)}")
            return None

        return check

    def _take_deletion_slot(self) -> bool:
        """Count one deletion against ``max_deletions`` (enforced here too: a plan can't widen it)."""
        limit = self.policy.max_deletions
        with self.tally.lock:
            if limit is not None and self.tally.deletions >= limit:
                return False
            self.tally.deletions += 1
            return True

    def _orphan_index(self, shash: str, e: PlanEntry, facts: SessionFacts) -> None:
        """A sidecar whose artifact is gone: no claim can land on it, so no fence is needed.

        An index goes only with or after its body: while the artifact exists, a plan line
        asking for its sidecar alone (an edited plan) is refused, or its reads would fail.
        """
        assert e.snapshot is not None and e.name is not None
        try:
            self.store.head(artifact_key(shash, e.name))
            self.tally.add("denied", e, "its artifact exists: an index is deleted only with its body")
            return
        except NotFound:
            pass
        except StoreError as exc:
            self.tally.add("retained_error", e, f"HEAD of its artifact failed: {type(exc).__name__}")
            return
        outcome, reason, _ = self.deleter.revalidate_and_delete(e.snapshot, e.snapshot.key,
                                                                self._young(facts, e.name))
        self.tally.add(outcome, e, reason)

    # -- the fence, then the deletions ---------------------------------------------------

    def _record(self, w: _Work, outcome: ApplyOutcome, reason: str) -> None:
        if w.entry is not None:
            self.tally.add(outcome, w.entry, reason)
        if w.takeover is not None:
            with self.tally.lock:
                self.tally.recovered[outcome] += 1

    def _condemn_and_delete(self, ledger: GcLedger, shash: str, work: list[_Work],
                            facts: SessionFacts) -> None:
        takeover = {w.name: w.takeover for w in work if w.takeover is not None}
        try:
            verdicts = ledger.condemn([w.fact for w in work], run_id=self.run_id,
                                      active_within=self.active_within, takeover=takeover)
        except (JournalError, StoreError) as exc:
            # Whether the CAS landed is unknown: the next run finds any condemnation and resolves it.
            for w in work:
                self._record(w, "retained_error", f"condemnation failed: {type(exc).__name__}")
            return
        failpoints.failpoint(FP_AFTER_CONDEMN)
        listed = self._listed_after_condemnation(shash, work)
        credit = QuotaCredit(self.store, shash, self.run_id)
        gone: list[str] = []
        lift: list[str] = []
        records = self._commit_records(shash, [w for w in work if verdicts.get(w.name) == "condemned"])
        validated: list[tuple[_Work, ObjectInfo]] = []
        indexes: list[ObjectSnapshot] = []
        # One directory fsync per batch on the local store; durable before DELETED is recorded.
        with self.store.deferred_sync():
            for w in work:
                verdict = verdicts.get(w.name)
                if verdict != "condemned":
                    self._record(w, *_NOT_CONDEMNED.get(verdict, ("retained_error",
                                                                  f"journal answered {verdict!r}")))
                    continue
                checked = self.deleter.revalidate(
                    w.fact, artifact_key(shash, w.name), self._young(facts, w.name),
                    listed=listed.get(w.name),
                    record_digest=None if self.authenticated_plan
                    else self._record_digest(shash, w.name, records))
                if isinstance(checked, tuple):
                    self._settle(shash, w, checked, gone, lift, credit, indexes)
                else:
                    validated.append((w, checked))
            # The bodies in one batch of conditional deletes, then their sidecars (an index
            # goes only once its body is gone).
            outcomes = self.deleter.delete_validated_many(
                [(artifact_key(shash, w.name), head) for w, head in validated])
            for (w, _), outcome in zip(validated, outcomes, strict=True):
                self._settle(shash, w, outcome, gone, lift, credit, indexes)
            self.deleter.delete_indexes(indexes)
        credit.flush()  # the session's quota counters get back what was deleted
        failpoints.failpoint(FP_AFTER_DELETE)
        try:
            ledger.finish(gone, lift, run_id=self.run_id, reason="race_detected")
        except (JournalError, StoreError) as exc:
            # Harmless: the condemnations stand and the next run finishes or lifts them.
            log.warning("gc.apply.finish_deferred", session_hash=shash, error=type(exc).__name__)

    def _listed_after_condemnation(self, shash: str, work: list[_Work]) -> dict[str, ObjectInfo]:
        """The session's artifact bodies as one listing shows them now, after the fence.

        Why: for an artifact whose digest the plan read from its commit record, this one
        LIST (a request per 1,000 objects; :meth:`ObjectStore.listed`, which on the local
        store reads just these artifacts' listing records) stands in for a HEAD per artifact; the
        ``If-Match`` delete then proves the object is still the listed one. Only with
        conditional deletes; empty (every artifact HEADed) when the listing fails.
        """
        if self.method != "if_match" or not any(
                w.entry is not None and w.entry.snapshot is not None and w.entry.snapshot.committed
                for w in work):
            return {}
        wanted = {w.name for w in work if w.entry is not None and w.entry.snapshot is not None
                  and w.entry.snapshot.committed}
        by_key = {artifact_key(shash, name): name for name in wanted}
        try:
            return {by_key[key]: info for key, info in self.store.listed(list(by_key)).items()}
        except StoreError as exc:
            log.info("gc.apply.listing_failed", session_hash=shash, error=type(exc).__name__)
            return {}

    def _commit_records(self, shash: str, work: list[_Work]) -> dict[str, bytes | None] | None:
        """The commit records of a plan without a MAC, read for the condemned artifacts in one
        batch (:meth:`ObjectStore.get_many`) after the fence; ``None``: read one by one
        (signed plan, or the batch failed: each artifact's own GET then decides)."""
        if self.authenticated_plan or not work:
            return None
        wanted = [index_key(shash, w.name) for w in work]
        try:
            found = self.store.get_many(wanted)
        except (StoreError, IntegrityError) as exc:  # one bad record must not decide for the others
            log.info("gc.apply.records_batch_failed", session_hash=shash, error=type(exc).__name__)
            return None
        return {key: found.get(key) for key in wanted}

    def _record_digest(self, shash: str, name: str, records: dict[str, bytes | None] | None = None
                       ) -> Callable[[str], str | None]:
        """Reads the digest the artifact's commit record gives the body with a given ETag.

        Why, for a plan without a MAC: the fence is keyed by the digest the condemnation
        names, and whoever can write an unauthenticated plan file could name another, so
        that a claim racing into the condemnation would not see it. One GET of the record
        (which pins the ETag) settles it — or the record :meth:`_commit_records` read; an
        authenticated plan's digest is the planner's.
        """
        key = index_key(shash, name)
        if records is not None and key in records:
            raw = records[key]
            return lambda etag: committed_digest_of(raw, etag, shash=shash, name=name)
        return lambda etag: committed_digest(self.store, key, etag, shash=shash, name=name)

    def _settle(self, shash: str, w: _Work, result: tuple[ApplyOutcome, str, bool], gone: list[str],
                lift: list[str], credit: QuotaCredit, indexes: list[ObjectSnapshot]) -> None:
        """One fenced artifact's outcome: finish it (and queue its sidecar), lift it, or keep it condemned."""
        outcome, reason, attempted = result
        if outcome in ("deleted", "already_missing"):
            gone.append(w.name)
            if outcome == "deleted":
                credit.note(credit.raw_size(w.name))
            index = w.index if w.index is not None else self.deleter.index_snapshot(shash, w.name)
            if index is not None:
                indexes.append(index)
        elif outcome == "race_detected" or not attempted:
            lift.append(w.name)
        # else: the delete's outcome is unknown — stay condemned; the next run resolves it.
        self._record(w, outcome, reason)


#: What each journal verdict other than ``condemned`` means for the artifact (it stays).
_NOT_CONDEMNED: dict[str | None, tuple[ApplyOutcome, str]] = {
    "claimed": ("retained_referenced", "a claim landed before the condemnation"),
    "active": ("retained_recent", "session became active before the condemnation"),
    "deleted": ("already_missing", "journal records it deleted"),
}


@dataclass(frozen=True)
class _Work:
    """One artifact this run condemns: what it must still be, its sidecar, its plan line."""

    name: str
    fact: CondemnFact
    index: ObjectSnapshot | None
    entry: PlanEntry | None
    #: The run whose leftover condemnation this run adopts (``None``: a fresh one).
    takeover: str | None = None


def _leftover_condemnations(shash: str, facts: SessionFacts,
                            published: dict[str, set[str]]) -> dict[str, _Work]:
    """Condemnations an interrupted (or concurrent) run left behind: adopted, to be finished."""
    work: dict[str, _Work] = {}
    for name, cf in sorted(facts.condemned.items()):
        if not layout_ok(shash, name) or name in published:
            continue  # a published slot outranks a leftover condemnation: never delete it
        work[name] = _Work(name, cf, None, None, takeover=cf.run_id)
    return work
