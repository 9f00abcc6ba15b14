"""A small server-rendered SVG bar chart: bytes stored per tool and per day (no script, no library)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Bar", "Chart", "bar_chart"]

#: Colour-blind-safe palette (Okabe-Ito), one per tool in order.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    days: list[tuple[float, str]]
    legend: list[tuple[str, str]]
    summary: str


def bar_chart(per_tool: dict[str, dict[str, int]], width: int = 640, height: int = 180) -> Chart:
    """Grouped bars (one group per day, one bar per tool), with a text summary for screen readers."""
    tools = sorted(per_tool)
    days = sorted({d for v in per_tool.values() for d in v})
    top = max((n for v in per_tool.values() for n in v.values()), default=0)
    bars: list[Bar] = []
    ticks: list[tuple[float, str]] = []
    if days and tools and top > 0:
        group = (width - 40) / len(days)
        bar_w = max(group / (len(tools) + 1), 1.0)
        for i, day in enumerate(days):
            gx = 40 + i * group
            ticks.append((gx + group / 2, day[5:]))
            for j, tool in enumerate(tools):
                n = per_tool[tool].get(day, 0)
                h = (height - 30) * n / top
                bars.append(Bar(gx + j * bar_w, height - 20 - h, bar_w * 0.9, h,
                                PALETTE[j % len(PALETTE)], f"{tool} on {day}: {n} bytes"))
    legend = [(tool, PALETTE[j % len(PALETTE)]) for j, tool in enumerate(tools)]
    totals = ", ".join(f"{t}: {sum(per_tool[t].values())} bytes" for t in tools) or "no spilled output yet"
    summary = f"Bytes stored per tool over {len(days)} day(s): {totals}"
    return Chart(width, height, bars, ticks, legend, summary)
