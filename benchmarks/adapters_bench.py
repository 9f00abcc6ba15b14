"""What the async API and the adapters' hook cost, and what they spare the event loop.

Three questions, each against the blocking ``Spiller.externalize`` as the baseline, on a
local store:

1. A small result (inline, nothing stored): per-call time of the blocking call, of
   ``AsyncSpiller.externalize`` (one worker-thread hop), and of the adapters' hook
   (``Session.spill``, which checks the policy first and hops only to spill).
2. A large result (a 2.2 MB build log, stored): the same three.
3. The event loop while a large result is spilled: the longest gap between ticks of a
   10 ms ticker when the blocking call runs on the loop vs when it is awaited.

    python benchmarks/adapters_bench.py [--small 2000] [--large 20]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from s3spill.adapters._common import Session
from s3spill.spill.aio import AsyncSpiller
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore

SESSION = "bench-session"
SMALL = "ok: 3 passed in 0.12s\n" * 20
LARGE = "".join(f"[{i:05d}] compiling module_{i}.c ... ok\n" for i in range(60_000))


def per_call(run: Callable[[], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        run()
    return (time.perf_counter() - start) / n


async def per_call_async(run: Callable[[], Awaitable[Any]], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await run()
    return (time.perf_counter() - start) / n


async def worst_gap(work: Callable[[], Awaitable[Any]]) -> float:
    """Longest gap between 10 ms ticks while ``work`` runs."""
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    await work()
    await asyncio.sleep(0.05)
    task.cancel()
    return max(b - a for a, b in itertools.pairwise(ticks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000, help="small calls per variant")
    parser.add_argument("--large", type=int, default=20, help="large spills per variant")
    args = parser.parse_args()

    store = LocalStore(tempfile.mkdtemp(prefix="s3spill-adapters-bench-"))
    spiller = Spiller(store, SESSION, journal=None)
    aspiller = AsyncSpiller.wrap(spiller)
    session = Session.open(store, SESSION, journal=None)

    async def measure() -> dict[str, tuple[float, float, float]]:
        out = {}
        for label, value, n in (("small (inline)", SMALL, args.small), ("large (2.2 MB, stored)", LARGE,
                                                                         args.large)):
            base = per_call(lambda v=value: spiller.externalize(v, "bash"), n)
            hop = await per_call_async(lambda v=value: aspiller.externalize(v, "bash"), n)
            hook = await per_call_async(lambda v=value: session.spill(v, "bash"), n)
            out[label] = (base, hop, hook)
        return out

    results = asyncio.run(measure())
    print(f"{'result':<24} {'Spiller':>12} {'AsyncSpiller':>14} {'ratio':>7} {'hook':>12} {'ratio':>7}")
    for label, (base, hop, hook) in results.items():
        print(f"{label:<24} {base * 1e6:>10.1f}us {hop * 1e6:>12.1f}us {hop / base:>6.2f}x "
              f"{hook * 1e6:>10.1f}us {hook / base:>6.2f}x")

    async def blocking() -> None:
        spiller.externalize(LARGE, "bash")

    async def awaited() -> None:
        await aspiller.externalize(LARGE, "bash")

    gaps = {"blocking call on the loop": [], "awaited (worker thread)": []}
    for _ in range(5):
        gaps["blocking call on the loop"].append(asyncio.run(worst_gap(blocking)))
        gaps["awaited (worker thread)"].append(asyncio.run(worst_gap(awaited)))
    print("\nlongest event-loop gap during a 2.2 MB spill (10 ms ticker, median of 5):")
    for label, values in gaps.items():
        print(f"  {label:<28} {statistics.median(values) * 1000:>7.1f} ms")
    spiller.close()


if __name__ == "__main__":
    main()
