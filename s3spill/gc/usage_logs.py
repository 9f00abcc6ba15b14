"""GC of a session's usage events: they go with the session's artifacts, by the same rule.

Why the unclaimed-artifact rule: a usage object holds what the model was shown of the
session's outputs, so it must not outlive them — but nothing ever claims it, so the rule
is the one for an unclaimed artifact (the session idle for ``session_ttl`` and the object
older than ``orphan_ttl``), judged again on a fresh HEAD at apply time. No fence is needed
(no claim can land on it); the delete is conditional on the planned ETag like any other.
"""

from __future__ import annotations

from typing import Any

from s3spill.gc.fence import SessionFacts
from s3spill.gc.models import ObjectSnapshot
from s3spill.gc.planfile import PlanEntry
from s3spill.keys import parse_key
from s3spill.store.base import ObjectInfo

__all__ = ["apply_usage_log", "plan_usage_log"]


def plan_usage_log(planner: Any, shash: str, name: str, info: ObjectInfo, facts: SessionFacts) -> None:
    """Plan one usage object (``planner``: gc.plan's planner): retained while recent, else deleted."""
    if planner.held("usage_log", info, info.last_modified, facts, shash=shash, name=name):
        return
    head = info if info.sha256 is not None else planner._head(info.key)
    if head is None:
        return
    if head.sha256 is None:
        planner._emit("retained_unknown", "usage_log", head, shash=shash, name=name,
                      reason="no SHA-256 metadata: not written by s3spill")
        return
    planner._emit("planned_delete", "usage_log", head, shash=shash, name=name,
                  snapshot=_snapshot(head),
                  reason="usage events of a session idle past session_ttl, older than orphan_ttl")


def apply_usage_log(applier: Any, shash: str, e: PlanEntry, facts: SessionFacts) -> None:
    """Delete one planned usage object after re-judging it on a fresh HEAD (``applier``: the
    session applier of gc.apply_session); never on the plan's word."""
    assert e.snapshot is not None and e.name is not None
    parsed = parse_key(e.snapshot.key)
    if parsed.kind != "usage_log" or parsed.session_hash != shash or parsed.name != e.name:
        applier.tally.add("denied", e, "plan entry's key is not a usage key of this session")
        return
    outcome, reason, _ = applier.deleter.revalidate_and_delete(e.snapshot, e.snapshot.key,
                                                               applier._young(facts, e.name))
    applier.tally.add(outcome, e, reason)


def _snapshot(info: ObjectInfo) -> ObjectSnapshot:
    return ObjectSnapshot(key=info.key, etag=info.etag, version_id=info.version_id, size=info.size,
                          last_modified=info.last_modified, sha256=info.sha256, committed=False)
