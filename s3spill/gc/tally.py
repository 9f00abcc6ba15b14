"""The apply run's tally: counts and bytes per outcome, the report's items, the decision log.

Why its own module: every session applier (:mod:`.apply_session`, on many threads) adds
to one tally and the run (:mod:`.apply`) turns it into the report; the tally knows how
to bound the report (deleted items are listed up to ``max_items``, refusals up to twice
that, then ``truncated``), not how anything is decided.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from s3spill.gc.models import ApplyItem, ApplyOutcome
from s3spill.gc.planfile import PlanEntry


@dataclass
class Tally:
    """What an apply run decided, counted across its threads (and streamed to the sink)."""

    max_items: int
    counts: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    items: list[ApplyItem] = field(default_factory=list)
    truncated: bool = False
    recovered: Counter[str] = field(default_factory=Counter)
    sessions: int = 0
    deletions: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Receives every decision (one dict per object) for the JSON Lines report.
    sink: Callable[[dict[str, Any]], None] | None = None

    def add(self, outcome: ApplyOutcome | str, entry: PlanEntry, reason: str = "") -> None:
        with self.lock:
            self.counts[outcome] += 1
            self.bytes[outcome] += entry.size
            if self.sink is not None:
                self.sink({"kind": "gc_decision", "phase": "apply", "outcome": outcome,
                           "planned": entry.status, "object_kind": entry.object_kind,
                           "key": entry.key, "session_hash": entry.session_hash,
                           "size": entry.size, "reason": (reason or entry.reason)[:300]})
            if entry.status != "planned_delete":
                return
            if outcome != "deleted" or len(self.items) < self.max_items:
                if len(self.items) < self.max_items * 2:
                    self.items.append(ApplyItem(
                        outcome=outcome, session_hash=entry.session_hash,
                        name=entry.name, object_kind=entry.object_kind, size=entry.size,
                        reason=reason[:300]))
                else:
                    self.truncated = True
            else:
                self.truncated = True
