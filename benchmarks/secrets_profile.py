"""Where ``at_rest`` masking spends its CPU, stage by stage, per MiB of the generated CI log.

Each stage includes the ones above it; CPU seconds of this thread, best of ``--reps``:

- the Hyperscan scan alone (no match callback), and the scan of each group of
  expressions alone (the entropy rule's three, every other rule's);
- the scan with its match callback (one Python call per match: it takes the GIL back);
- the candidate lines (their bounds, the exact triggers' confirmations);
- LineMasker.process (the rules on the candidate lines);
- StreamRedactor.push (the carry across chunks, the one copy of a chunk's whole lines);

and, for scale, SHA-256 over the same chunks. Matches and candidate lines per MiB are
printed too. The load average is printed: the machine is shared.

    python benchmarks/secrets_profile.py [--mib 20] [--reps 5]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from s3spill.context.secrets import StreamRedactor, triggers  # noqa: E402
from s3spill.context.secrets.detector import SecretDetector  # noqa: E402
from s3spill.context.secrets.engine import _collect  # noqa: E402
from s3spill.context.secrets.masking import LineMasker  # noqa: E402
from tests.context.secrets.clean_build_logs import build_log  # noqa: E402

MiB = 1024 * 1024


def _best(run: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.thread_time()
        run()
        best = min(best, time.thread_time() - started)
    return best


def _database(patterns: list[str]) -> tuple[Any, Any]:
    import hyperscan

    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[p.encode() for p in patterns], ids=list(range(len(patterns))),
               elements=len(patterns), flags=[0] * len(patterns))
    return db, hyperscan.Scratch(db)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    log = build_log(args.mib * MiB)
    chunks = [log[i:i + MiB] for i in range(0, len(log), MiB)]
    n = len(log) / MiB
    detector = SecretDetector("hyperscan")
    engine: Any = detector.engine
    StreamRedactor(detector).push(log[:4 * MiB])  # warm: the library's rules loaded
    print(f"load average at start: {os.getloadavg()}; {n:.0f} MiB")

    # (getattr: the same script measures the code before issue 31's last wave, one expression a rule)
    parts: Callable[[str], tuple[str, ...]] = getattr(triggers, "prefilter_parts", lambda p: (p,))
    others = [p for k in triggers.TRIGGERS if k != "high-entropy" for p in parts(triggers.prefilter(k))]
    groups = {"entropy rule": list(parts(triggers.prefilter("high-entropy"))),
              "every other rule": others}
    for name, patterns in groups.items():
        db, scratch = _database(patterns)
        took = _best(lambda db=db, scratch=scratch: [db.scan(c, scratch=scratch) for c in chunks], args.reps)
        print(f"  scan, {name}: {took / n * 1e3:.2f} ms/MiB")

    matches: list[int] = []
    stages: dict[str, Callable[[], object]] = {
        "Hyperscan scan, no callback": lambda: [engine._db.scan(c, scratch=engine._scratch())
                                                for c in chunks],
        "scan with the match callback": lambda: [
            engine._db.scan(c, match_event_handler=_collect, context=matches, scratch=engine._scratch())
            for c in chunks],
        "+ candidate lines": lambda: [engine.candidates(c, 0, len(c)) for c in chunks],
        "+ rules (LineMasker.process)": lambda: [LineMasker(detector).process(c) for c in chunks],
        "+ carry and copy (StreamRedactor.push)": lambda: [StreamRedactor(detector).push(c) for c in chunks],
        "for scale: sha256": lambda: [hashlib.sha256(c).digest() for c in chunks],
    }
    for name, run in stages.items():
        matches.clear()
        print(f"{name:40s} {_best(run, args.reps) / n * 1e3:.2f} ms/MiB")
    matches.clear()
    for c in chunks:
        engine._db.scan(c, match_event_handler=_collect, context=matches, scratch=engine._scratch())
    lines = sum(len(engine.candidates(c, 0, len(c))) for c in chunks)
    print(f"matches {len(matches) / n:.0f} per MiB; candidate lines {lines / n:.0f} per MiB")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
