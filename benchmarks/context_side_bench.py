"""Cost of the context side per byte of tool output, against a plain SHA-256 pass.

The Spiller pushes every chunk through a TextRetainer and the error-line scanner while
the same chunk goes to the store (which hashes it), so their throughput is compared with
hashlib.sha256 over
the same chunks: the floor any spill pays. Also prints peak RSS (the context half must stay
bounded whatever the size), the pointer's render time, and log compression figures.

    python benchmarks/context_side_bench.py --mib 256
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from s3spill.context.logcompress import compress_log  # noqa: E402
from s3spill.context.pointer import PointerFacts, render_pointer  # noqa: E402
from s3spill.context.policy import SpillPolicy  # noqa: E402
from s3spill.context.retention import TextRetainer  # noqa: E402
from s3spill.context.salient import SalientScanner  # noqa: E402
from s3spill.context.tokens import estimate_tokens  # noqa: E402
from tests.context.test_logcompress import eslint_log, vitest_failure_log  # noqa: E402

CHUNK = 1 << 20
LINE = b"2026-01-01T00:00:00Z INFO GET /api/v1/items/12345 status=200 bytes=5123 took=12ms\n"


def chunks(mib: int) -> Callable[[], list[bytes]]:
    block = (LINE * (CHUNK // len(LINE) + 1))[:CHUNK]
    return lambda: [block] * mib  # the same 1 MiB object: input costs no memory


def rate(mib: int, run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return mib / (time.perf_counter() - start)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="output size in MiB (default 256)")
    args = parser.parse_args()
    policy = SpillPolicy()
    throughput(args.mib, policy)
    render_times(args.mib, policy)
    compression()


def throughput(mib: int, policy: SpillPolicy) -> None:
    """Each context-side pass against the sha256 floor, over the same chunks; peak RSS."""
    data = chunks(mib)
    rule = policy.for_tool("bash")

    def sha() -> None:
        h = hashlib.sha256()
        for c in data():
            h.update(c)

    def retainer() -> None:
        r = TextRetainer(rule.retention())
        for c in data():
            r.push(c)
        r.finish()

    def scanner() -> None:
        s = SalientScanner(skip_bytes=rule.smallest_head())
        for c in data():
            s.push(c)
        s.finish()

    def spiller_context_half() -> None:
        # What the Spiller's one pass does on the context side: retain + capped error scan.
        r = TextRetainer(rule.retention())
        sc = SalientScanner(skip_bytes=rule.smallest_head(), max_scan_bytes=policy.salient_scan_bytes)
        for c in data():
            r.push(c)
            sc.push(c)
        r.finish()
        sc.finish()

    rss0 = peak_rss_mib()
    floor = rate(mib, sha)
    print(f"output: {mib} MiB in 1 MiB chunks, log lines without errors")
    print(f"sha256 floor            {floor:8.0f} MiB/s  (1.00x)")
    for name, fn in [("TextRetainer", retainer), ("SalientScanner (no cap)", scanner),
                     ("retainer + capped scan", spiller_context_half)]:
        r = rate(mib, fn)
        print(f"{name:<23} {r:8.0f} MiB/s  ({floor / r:.2f}x the sha256 time)")
    print(f"SalientScanner stops after {policy.salient_scan_bytes >> 20} MiB past the head by default")
    print(f"peak RSS {peak_rss_mib():.0f} MiB (interpreter + one 1 MiB chunk; {rss0:.0f} MiB before)")


def render_times(mib: int, policy: SpillPolicy) -> None:
    """The pointer's render time over up to 64 MiB retained, at the default and a tight budget."""
    rule = policy.for_tool("bash")
    r = TextRetainer(rule.retention())
    sc = SalientScanner(skip_bytes=rule.smallest_head(), max_scan_bytes=policy.salient_scan_bytes)
    for c in chunks(mib)()[: min(mib, 64)]:
        r.push(c)
        sc.push(c)
    retained, salient = r.finish(), sc.finish()
    head, tail = rule.preview(1)

    def render(p: SpillPolicy):  # type: ignore[no-untyped-def]
        facts = PointerFacts(source_id="artifact:x", tool="bash", sha256="0" * 64, summary="bench",
                             call_id=None, exit_code=1, total_bytes=retained.total_bytes,
                             line_count=retained.line_count, read_tool=p.read_tool, grep_tool=p.grep_tool)
        return render_pointer(facts, retained, head_bytes=head, tail_bytes=tail, budget=p.budget(),
                              salient=salient)

    start = time.perf_counter()
    for _ in range(20):
        out = render(policy)
    plain_ms = (time.perf_counter() - start) / 20 * 1000
    tight = SpillPolicy(max_inline_tokens=4_000, token_counter=estimate_tokens)
    start = time.perf_counter()
    for _ in range(20):
        out = render(tight)
    tight_ms = (time.perf_counter() - start) / 20 * 1000
    print(f"render pointer: {plain_ms:.2f} ms (fits at once), {tight_ms:.2f} ms (4,000-token budget, "
          f"{len(out.text)} chars)")


def compression() -> None:
    """Log compression of the two sample logs the tests use."""
    for name, log in [("vitest 394 lines", vitest_failure_log()), ("eslint report", eslint_log())]:
        start = time.perf_counter()
        res = compress_log(log)
        ms = (time.perf_counter() - start) * 1000
        verdict = "compressed" if res.changed else "unchanged (under 15%)"
        print(f"log compression, {name}: {res.original_lines} -> {res.shown_lines} lines, "
              f"saving {res.attempted_saving:.1%}, {verdict}, {ms:.1f} ms")


if __name__ == "__main__":
    main()
