"""Plan lines built without pydantic: the bytes the models dumped, refused where they refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.gc.models import PLAN_STATUSES, ObjectSnapshot
from s3spill.gc.planfile import PlanEntry, PlanLine, snapshot_json
from tests.examples import examples

_ZONES = [UTC, timezone(timedelta(0)), timezone(timedelta(hours=1)),
          timezone(timedelta(hours=-5, minutes=-30))]
_KINDS = ["artifact", "index", "manifest", "segment", "owner", "unknown", "claim", "usage_log"]

texts = st.text(max_size=40)
hex64 = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
stamps = st.builds(lambda d, z: d.replace(tzinfo=z), st.datetimes(min_value=datetime(1971, 1, 1),
                                                                   max_value=datetime(2200, 1, 1)),
                   st.sampled_from(_ZONES))
snapshots = st.fixed_dictionaries({
    "key": texts, "etag": texts, "version_id": st.none() | texts, "size": st.integers(0, 2**53),
    "last_modified": stamps, "sha256": st.none() | hex64, "committed": st.booleans()})


def _pair(status: str, kind: str, shash: str | None, name: str | None, key: str | None, size: int,
          reason: str, snap: dict[str, Any] | None, index: dict[str, Any] | None) -> tuple[bytes, bytes]:
    line = PlanLine(status, kind, shash, name, key, size, reason,  # type: ignore[arg-type]
                    snapshot_json(**snap) if snap else None, snapshot_json(**index) if index else None)
    model = PlanEntry(status=status, object_kind=kind, session_hash=shash, name=name,  # type: ignore[arg-type]
                      key=key, size=size, reason=reason,
                      snapshot=ObjectSnapshot(**snap) if snap else None,
                      index_snapshot=ObjectSnapshot(**index) if index else None)
    return line.dump(), model.model_dump_json(exclude_defaults=False).encode()


@settings(max_examples=examples(suite=75, thorough=300), deadline=None)
@given(st.sampled_from(PLAN_STATUSES), st.sampled_from(_KINDS), st.none() | hex64.map(lambda h: h[:32]),
       st.none() | texts, st.none() | texts, st.integers(0, 2**53), texts, st.none() | snapshots,
       st.none() | snapshots)
def test_a_plan_line_is_the_bytes_the_model_dumped(status: str, kind: str, shash: str | None,
                                                   name: str | None, key: str | None, size: int,
                                                   reason: str, snap: dict[str, Any] | None,
                                                   index: dict[str, Any] | None) -> None:
    """Every status, kind, zone, optional field and text: the same JSON line, byte for byte,
    and the line reads back as the model (what apply reads)."""
    if status == "planned_delete" and (snap is None or shash is None or name is None
                                       or (kind == "artifact" and snap["sha256"] is None)):
        with pytest.raises(ValueError):
            _pair(status, kind, shash, name, key, size, reason, snap, index)
        return
    ours, theirs = _pair(status, kind, shash, name, key, size, reason, snap, index)
    assert ours == theirs
    assert PlanEntry.model_validate_json(ours).model_dump_json().encode() == theirs


@pytest.mark.parametrize("change", [
    {"sha256": "ABC" + "0" * 61}, {"sha256": "0" * 63}, {"sha256": 5}, {"size": -1}, {"size": 1.0},
    {"size": True}, {"etag": None}, {"key": 3}, {"version_id": 7}, {"last_modified": "2026-01-01"}])
def test_a_snapshot_the_model_refuses_is_refused(change: dict[str, Any]) -> None:
    """A listing that hands the planner something the snapshot model would refuse fails the
    plan, as the model did, instead of writing a line apply could not read back."""
    good = {"key": "k", "etag": '"e"', "version_id": None, "size": 1,
            "last_modified": datetime(2026, 1, 1, tzinfo=UTC), "sha256": "0" * 64, "committed": False}
    snapshot_json(**good)
    with pytest.raises(ValueError):
        snapshot_json(**{**good, **change})


def test_a_line_held_back_by_the_limit_is_the_model_copy() -> None:
    """``max_deletions`` turns a planned line into ``retained_limit`` without its snapshot,
    as ``model_copy(update=...)`` did."""
    snap = {"key": "k", "etag": '"e"', "version_id": None, "size": 1,
            "last_modified": datetime(2026, 1, 1, 0, 0, 0, 5, tzinfo=UTC), "sha256": "0" * 64,
            "committed": True}
    line = PlanLine("planned_delete", "artifact", "a" * 32, "n", "k", 3, "old", snapshot_json(**snap),
                    snapshot_json(**{**snap, "sha256": None}))
    model = PlanEntry.model_validate_json(line.dump())
    copied = model.model_copy(update={"status": "retained_limit", "snapshot": None,
                                      "reason": "max_deletions=1 reached"})
    assert line.limited("max_deletions=1 reached").dump() == copied.model_dump_json().encode()
