"""GC's fence in the lease journal: what one CAS appends to condemn, or finish condemning, a batch.

Split from :mod:`s3spill.leases.journal` (which owns the publication protocol) because
these are GC's records: each planner decides, inside the manifest's compare-and-swap,
what the verified fold allows — so a prepare racing a condemnation and the condemnation
itself can never both win — and reports a verdict per artifact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from s3spill.leases.cas import AppendDecision, AppendPlanner, ManifestCas, PlannedAppend
from s3spill.leases.journal_fold import JournalFold
from s3spill.leases.journal_format import JournalManifest

__all__ = ["CondemnItem", "CondemnVerdict", "condemnation_planner", "finish_planner"]


@dataclass(frozen=True)
class CondemnItem:
    """An artifact GC wants to fence, and the snapshot (ETag, size, version) it validated."""

    source_id: str
    sha256: str
    etag: str | None = None
    size: int | None = None
    version_id: str | None = None


#: What the journal answered to one condemnation, decided inside its compare-and-swap:
#: ``condemned`` (fenced: no claim may land on it now), ``claimed`` (a pending or
#: unexpired claim protects it: a prepare won the race), ``active`` (the session was
#: active within the TTL: nothing condemned), ``deleted`` (already recorded deleted),
#: ``held`` (another run holds the condemnation and did not hand it over).
CondemnVerdict = Literal["condemned", "claimed", "active", "deleted", "held"]


def condemnation_planner(cas: ManifestCas, items: Sequence[CondemnItem], plan_id: str,
                         verdicts: dict[str, CondemnVerdict], *, clock: Callable[[], datetime],
                         active_within: timedelta | None, takeover: Mapping[str, str] | None
                         ) -> AppendPlanner:
    """CONDEMNED (and LIFTED for adopted leftovers) for ``items``; fills ``verdicts`` per attempt."""
    handover = dict(takeover or {})

    def plan(manifest: JournalManifest | None, fold: JournalFold) -> AppendDecision:
        verdicts.clear()
        at = clock()
        last = manifest.last_active if manifest is not None else None
        if active_within is not None and last is not None and at - last < active_within:
            verdicts.update({item.source_id: "active" for item in items})
            return cas.noop("session_active", None)
        specs: list[dict[str, Any]] = []
        for item in items:
            previous = handover.get(item.source_id)
            settled = _settled_verdict(fold, item, plan_id, previous, at)
            verdicts[item.source_id] = settled or "condemned"
            if settled is None:
                specs += _condemn_specs(item, plan_id, previous)
        if not specs:
            return cas.noop("nothing_to_condemn", None)
        return PlannedAppend(specs, "condemned", "CONDEMNED")

    return plan


def finish_planner(cas: ManifestCas, deleted: Sequence[str], lifted: Sequence[str], plan_id: str,
                   results: dict[str, str], *, reason: str) -> AppendPlanner:
    """DELETED / LIFTED for ``plan_id``'s own condemnations; fills ``results`` per attempt."""

    def plan(manifest: JournalManifest | None, fold: JournalFold) -> AppendDecision:
        results.clear()
        specs: list[dict[str, Any]] = []
        for event, source_ids in (("DELETED", deleted), ("LIFTED", lifted)):
            for source_id in source_ids:
                art = fold.artifacts.get(source_id)
                if art is not None and art.plan_id == plan_id and art.state == event:
                    results[source_id] = f"already_{event.lower()}"
                elif art is None or art.state != "CONDEMNED" or art.plan_id != plan_id:
                    results[source_id] = "not_condemned"
                else:
                    spec: dict[str, Any] = {"event": event, "source_id": source_id,
                                            "sha256": art.sha256, "plan_id": plan_id}
                    if event == "LIFTED":
                        spec["reason"] = reason[:200]
                    specs.append(spec)
                    results[source_id] = event.lower()
        if not specs:
            return cas.noop("nothing_to_finish", None)
        return PlannedAppend(specs, "finished", None)

    return plan


def _settled_verdict(fold: JournalFold, item: CondemnItem, plan_id: str, previous: str | None,
                    at: datetime) -> CondemnVerdict | None:
    """The verdict when nothing is appended for ``item``; ``None``: condemn it now."""
    art = fold.artifacts.get(item.source_id)
    if art is not None and art.state == "DELETED":
        return "deleted"
    if art is not None and art.state == "CONDEMNED":
        if art.plan_id == plan_id:
            return "condemned"
        if art.plan_id != previous or art.sha256 != item.sha256:
            return "held"
    elif previous is not None:
        return "held"  # the leftover was finished or lifted meanwhile
    if fold.protecting(item.source_id, at):
        return "claimed"
    return None


def _condemn_specs(item: CondemnItem, plan_id: str, previous: str | None) -> list[dict[str, Any]]:
    """CONDEMNED for ``plan_id`` — after LIFTED for ``previous`` when it adopts a leftover."""
    specs: list[dict[str, Any]] = []
    if previous is not None:
        specs.append({"event": "LIFTED", "source_id": item.source_id, "sha256": item.sha256,
                      "plan_id": previous, "reason": f"taken over by {plan_id}"[:200]})
    specs.append({"event": "CONDEMNED", "source_id": item.source_id, "sha256": item.sha256,
                  "plan_id": plan_id, "etag": item.etag, "size": item.size,
                  "version_id": item.version_id})
    return specs
