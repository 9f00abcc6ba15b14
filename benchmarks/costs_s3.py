"""S3 section of ``benchmarks/costs.py``: requests per page read and per grep (moto server).

Counts are what the boto3 client sent (``s3spill.testing.record_operations``), so they do
not depend on the machine's load. Cold: a fresh store and ``ArtifactStore`` (a new
process's first call); warm: the next page through the same ``ArtifactStore``. The grep
searches a 1 MiB and a ``--grep-big-mib`` artifact for a pattern of every 50th line,
showing 20 matches (the rest counted), as ``s3spill grep`` does by default.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

BUCKET = "costs-bench"
SESSION = "costs-s3"


def _count(sent: list[str], mark: int) -> dict[str, int]:
    return dict(Counter(sent[mark:]))


def section_s3(report: Any, big_mib: int) -> None:
    from benchmarks.read_bench import log_lines
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.testing import EmbeddedS3, record_operations

    figures: dict[str, Any] = {}
    with EmbeddedS3() as s3:
        s3.create_bucket(BUCKET)
        writer = ArtifactStore(s3.store(BUCKET, "p"), session_id=SESSION)
        refs = {mib: writer.write(SESSION, log_lines(mib << 20, match_every=50), "bench")
                for mib in sorted({1, big_mib})}
        for mib, ref in refs.items():
            store = s3.store(BUCKET, "p")
            sent = record_operations(store.client)
            arts = ArtifactStore(store, session_id=SESSION)
            # A third in: not on a chunk boundary (the middle of a power-of-two size is one, and a
            # page that starts there needs the chunk before it too: one GET more, said in the docs).
            mid = ref.line_count // 3
            arts.read_page(ref.source_id, offset=mid, limit=2000)
            cold = _count(sent, 0)
            mark = len(sent)
            arts.read_page(ref.source_id, offset=0, limit=2000)  # another chunk, unless there is one
            warm = _count(sent, mark)
            grep_store = s3.store(BUCKET, "p")
            grep_sent = record_operations(grep_store.client)
            result = ArtifactStore(grep_store, session_id=SESSION).grep(ref.source_id, "ERROR",
                                                                        max_matches=20)
            grep = _count(grep_sent, 0)
            figures[f"{mib}_mib"] = {"cold_page": cold, "warm_page": warm, "grep": grep,
                                     "grep_total_matches": result.total_matches,
                                     "size_bytes": ref.size_bytes}
            n_cold, n_warm, n_grep = sum(cold.values()), sum(warm.values()), sum(grep.values())
            named = ", ".join(f"{k} {v}" for k, v in sorted(grep.items()))
            report.rows.append((f"S3 requests, cold page of a {mib} MiB artifact", str(n_cold),
                                "2 (goal)", n_cold / 2, 1.0))
            report.rows.append((f"S3 requests, warm page (another chunk, if any) of a {mib} MiB artifact",
                                str(n_warm), "1 (goal)", n_warm / 1, 1.0))
            report.rows.append((f"S3 requests, grep of a {mib} MiB artifact ({result.total_matches:,} "
                                "matches)", f"{n_grep} ({named})", "", float(n_grep), None))
    report.raw["s3_requests"] = figures
