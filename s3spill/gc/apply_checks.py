"""What a plan line may ask of apply at all, and how a reason states an age.

Split from :mod:`s3spill.gc.apply_session` (the per-session steps) because these checks
depend on the plan line and the layout alone: a plan is never trusted, so a line whose
key is not exactly the layout's artifact or sidecar key, or that names a published
artifact, is refused before the journal or the store is asked anything.
"""

from __future__ import annotations

from datetime import timedelta

from s3spill.errors import InvalidKey
from s3spill.gc.key_cache import artifact_key, index_key
from s3spill.gc.models import ApplyOutcome
from s3spill.gc.planfile import PlanEntry

__all__ = ["age_text", "layout_ok", "refusal"]


def layout_ok(shash: str, name: str) -> bool:
    try:
        artifact_key(shash, name)
        return True
    except InvalidKey:
        return False


def _entry_layout_ok(shash: str, e: PlanEntry) -> bool:
    """Never trust a plan's key: it must be exactly what the layout derives."""
    assert e.snapshot is not None and e.name is not None
    if not layout_ok(shash, e.name):
        return False
    expected = (artifact_key(shash, e.name) if e.object_kind == "artifact"
                else index_key(shash, e.name))
    if e.snapshot.key != expected:
        return False
    return e.index_snapshot is None or e.index_snapshot.key == index_key(shash, e.name)


def refusal(shash: str, e: PlanEntry, published: dict[str, set[str]]) -> tuple[ApplyOutcome, str] | None:
    """Why a plan line may not be acted on at all, whatever the journal says, or ``None``."""
    if e.object_kind not in ("artifact", "index"):
        return "denied", f"a plan may only delete artifacts and sidecars, not {e.object_kind}"
    if not _entry_layout_ok(shash, e):
        return "denied", "plan entry's key is not an artifact key of this store"
    if e.name in published:
        return "retained_referenced", "an owner slot holds a published reference"
    return None


def age_text(delta: timedelta) -> str:
    """A duration as a reason states it: ``24h``, ``90s``, ``3d2h`` (whole seconds; days from 2)."""
    seconds = max(0, int(delta.total_seconds()))
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size and (unit != "d" or seconds >= 2 * size):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    if seconds or not parts:
        parts.append(f"{seconds}s")
    return "".join(parts)
