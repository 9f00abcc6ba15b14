"""``s3spill stats``: per tool, how much spilled, what it cost, and whether the model read it back.

Why these figures: a spilled output the model always reads back (many pages) means the
threshold is too low — the model pays a pointer *and* the pages; one it never reads back
means the preview was enough and a lower threshold would save context. The suggestion
says which, with the numbers that made it. Everything comes from usage objects
(:mod:`s3spill.usage.source`), queried with DuckDB (:mod:`s3spill.usage.engine`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from s3spill.store.base import ObjectStore
from s3spill.usage.engine import scan
from s3spill.usage.source import usage_objects

__all__ = ["MIN_SPILLS", "ToolStats", "UsageStats", "compute_stats", "suggest"]

#: Fewer spilled outputs than this and no suggestion is made.
MIN_SPILLS = 5
#: Re-read rates at or above / at or below which the threshold should move.
RAISE_AT, LOWER_AT = 0.8, 0.1

#: What the query reads (the shown text is never among them: see ``part_body``).
_COLUMNS = ("ts", "session", "op", "tool", "artifact", "spilled", "raw_bytes", "stored_bytes",
            "threshold", "shown_bytes")

#: One pass over the events: first per artifact (a spill and every read of it share one
#: session and name; inline spills, which have no name, group per tool), then per tool.
#: Why not a join of spills against reads: that needs the events twice, so stored in a
#: table first — as much CPU again as parsing them, over 1,000,000 events
#: (benchmarks/usage_bench.py stats); a streaming aggregate needs them once. Artifact names
#: are unique within a session (a timestamp and a counter), so each group holds at most one
#: spill and the figures are the join's (tests/usage/test_stats.py checks against the join).
_QUERY = """
WITH g AS (
    SELECT any_value(tool) FILTER (WHERE op = 'spill') AS tool,
           count(*) AS events,
           count(*) FILTER (WHERE op = 'spill') AS spills,
           count(*) FILTER (WHERE op = 'spill' AND spilled) AS n_spilled,
           sum(raw_bytes) FILTER (WHERE op = 'spill' AND spilled) AS raw,
           sum(stored_bytes) FILTER (WHERE op = 'spill' AND spilled) AS stored,
           sum(shown_bytes) FILTER (WHERE op = 'spill') AS spill_shown,
           max(threshold) FILTER (WHERE op = 'spill') AS thr,
           count(*) FILTER (WHERE op IN ('read', 'live_read')) AS pages,
           count(*) FILTER (WHERE op IN ('grep', 'live_grep')) AS greps,
           count(*) FILTER (WHERE op <> 'spill') AS others,
           sum(shown_bytes) FILTER (WHERE op <> 'spill') AS other_shown
    FROM ({events}) WHERE ts >= ?
    GROUP BY session, artifact, CASE WHEN artifact IS NULL THEN tool END
)
SELECT tool,
       sum(spills) AS calls,
       sum(n_spilled) AS spilled,
       coalesce(sum(raw), 0) AS raw_bytes,
       coalesce(sum(stored), 0) AS stored_bytes,
       coalesce(sum(n_spilled) FILTER (WHERE others > 0), 0) AS reread,
       coalesce(sum(n_spilled * pages), 0) AS pages,
       coalesce(sum(n_spilled * greps), 0) AS greps,
       coalesce(sum(spill_shown), 0) + coalesce(sum(spills * other_shown) FILTER (WHERE others > 0), 0)
           AS shown_bytes,
       max(thr) AS threshold,
       quantile_disc(raw, 0.9) FILTER (WHERE n_spilled > 0) AS p90_spilled_bytes,
       sum(sum(events)) OVER () AS total_events
FROM g GROUP BY tool ORDER BY tool
"""


@dataclass(frozen=True)
class ToolStats:
    tool: str
    calls: int
    spilled: int
    raw_bytes: int
    stored_bytes: int
    reread: int
    pages: int
    greps: int
    shown_bytes: int
    threshold: int | None
    p90_spilled_bytes: int | None
    suggestion: str = ""
    suggested_threshold: int | None = None
    reason: str = ""

    @property
    def spill_share(self) -> float:
        return self.spilled / self.calls if self.calls else 0.0

    @property
    def reread_rate(self) -> float:
        return self.reread / self.spilled if self.spilled else 0.0

    @property
    def pages_per_reread(self) -> float:
        return self.pages / self.reread if self.reread else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "spill_share": round(self.spill_share, 4),
                "reread_rate": round(self.reread_rate, 4),
                "pages_per_reread": round(self.pages_per_reread, 2)}


@dataclass(frozen=True)
class UsageStats:
    tools: list[ToolStats]
    events: int
    objects: int
    since: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"events": self.events, "objects": self.objects, "since": self.since,
                "tools": [t.as_dict() for t in self.tools]}

    def render(self) -> str:
        head = (f"{'tool':<20} {'calls':>6} {'spilled':>8} {'stored':>10} {'zstd':>10} "
                f"{'re-read':>8} {'pages':>6} {'shown':>10}  suggestion")
        lines = [f"{self.events} usage events in {self.objects} objects"
                 + (f" since {self.since}" if self.since else ""), head]
        for t in self.tools:
            lines.append(f"{t.tool[:20]:<20} {t.calls:>6} {t.spill_share:>7.0%} {_size(t.raw_bytes):>10} "
                         f"{_size(t.stored_bytes):>10} {t.reread_rate:>7.0%} {t.pages_per_reread:>6.1f} "
                         f"{_size(t.shown_bytes):>10}  {t.suggestion}: {t.reason}")
        return "\n".join(lines)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def suggest(t: ToolStats) -> ToolStats:
    """The threshold suggestion for one tool, and the reason in numbers."""
    from dataclasses import replace

    if t.spilled < MIN_SPILLS:
        return replace(t, suggestion="keep", reason=f"only {t.spilled} spilled output(s): too few to judge")
    rate = f"{t.reread_rate:.0%} of {t.spilled} spilled outputs read back"
    if t.reread_rate >= RAISE_AT:
        target = max(t.p90_spilled_bytes or 0, (t.threshold or 0) * 2)
        return replace(t, suggestion="raise", suggested_threshold=target,
                       reason=f"{rate} ({t.pages_per_reread:.1f} pages each): the model needs them; "
                              f"a threshold of {target} bytes keeps 90% of them inline")
    if t.reread_rate <= LOWER_AT:
        lowered = max(t.threshold // 2, 1024) if t.threshold else None
        return replace(t, suggestion="lower", suggested_threshold=lowered,
                       reason=f"{rate}: the preview was enough; a lower threshold saves context")
    return replace(t, suggestion="keep", suggested_threshold=t.threshold,
                   reason=f"{rate}: between {LOWER_AT:.0%} and {RAISE_AT:.0%}")


def _row(row: dict[str, Any]) -> ToolStats:
    def num(key: str) -> int:
        return int(row[key] or 0)

    def maybe(key: str) -> int | None:
        return None if row[key] is None else int(row[key])

    return ToolStats(tool=str(row["tool"]), calls=num("calls"), spilled=num("spilled"),
                     raw_bytes=num("raw_bytes"), stored_bytes=num("stored_bytes"), reread=num("reread"),
                     pages=num("pages"), greps=num("greps"), shown_bytes=num("shown_bytes"),
                     threshold=maybe("threshold"), p90_spilled_bytes=maybe("p90_spilled_bytes"))


def compute_stats(store: ObjectStore, *, session_hash: str | None = None,
                  since: timedelta | None = None, now: datetime | None = None) -> UsageStats:
    """Per-tool usage figures from the usage objects of one session or the whole store."""
    now = now or datetime.now(UTC)
    cutoff = now - since if since is not None else None
    objects = usage_objects(store, session_hash=session_hash, since=cutoff.date() if cutoff else None)
    stamp = cutoff.strftime("%Y-%m-%dT%H:%M:%S.000Z") if cutoff else ""
    with scan(store, objects, columns=_COLUMNS) as (con, select, chosen):
        try:
            rows = con.execute(_QUERY.format(events=select), [stamp]).fetchall()
            names = [d[0] for d in con.description]
        finally:
            con.close()
    found = [dict(zip(names, row, strict=True)) for row in rows]
    total = int(found[0]["total_events"] or 0) if found else 0
    found = [row for row in found if row["tool"] is not None]  # the groups of reads without their spill
    tools = [suggest(_row(row)) for row in found]
    return UsageStats(tools=tools, events=total, objects=len(chosen),
                      since=cutoff.isoformat() if cutoff else None)
