"""Typed outputs: what a spill of JSON, NDJSON or CSV costs against text, and JSON path reads.

Part 1, spill cost. Plain log text, NDJSON, CSV (quoted fields, some with newlines) and
one JSON document (an array of objects) go through the Spiller into a local store, each
twice in alternation: as it is, and with detection switched off (the same bytes previewed
as text, as before this feature). The ratio is what detection plus the structured work
costs: text and NDJSON only detection and cuts; CSV also the quote-aware record counting
(in the Spiller and in the index's record table); JSON also the ijson outline over its
first 32 MiB.

Part 2, a JSON Pointer read near the end of a large document, each in its own child
process (so its peak RSS is its own): bytes fetched from the store, time and peak RSS of
``read_json("/items/<last>")`` and of ``read_json("/items/0")``, against the baseline of
streaming the whole artifact once (``iter_verified``).

Part 3 (``--ndjson-mib``): a large NDJSON spill checked as a person would check it: the
pointer's record counts, the head's and tail's records, and the last page by line.

    python benchmarks/typed_bench.py --mib 256 --json-mib 200 --ndjson-mib 1024
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import s3spill.spill.job as job  # noqa: E402
from s3spill.artifacts.store import ArtifactStore  # noqa: E402
from s3spill.spill.spiller import Spiller  # noqa: E402
from s3spill.store.local import LocalStore  # noqa: E402
from s3spill.typed.detect import TEXT  # noqa: E402
from tests.artifacts.inspect_store import CountingStore  # noqa: E402

MiB = 1 << 20
SESSION = "typed-bench"
LINE = b"2026-01-01T00:00:00Z INFO GET /api/v1/items/12345 status=200 bytes=5123 took=12ms\n"


def _block(unit: Callable[[int], bytes], size: int = MiB) -> bytes:
    """Whole units (lines, records, items) up to about ``size`` bytes."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += unit(i)
        i += 1
    return bytes(out)


def text_stream(mib: int) -> Iterator[bytes]:
    block = _block(lambda i: LINE)
    return iter([block] * mib)


def ndjson_stream(mib: int) -> Iterator[bytes]:
    block = _block(lambda i: json.dumps({"n": i, "msg": f"event {i}", "ok": i % 3 == 0}).encode() + b"\n")
    return iter([block] * mib)


def csv_stream(mib: int) -> Iterator[bytes]:
    block = _block(lambda i: (f'{i},"name ""{i}""","multi\nline {i}"\r\n' if i % 5 == 0
                              else f'{i},"name {i}",plain {i}\r\n').encode())
    return iter([b"id,name,comment\r\n" + block] + [block] * (mib - 1))


def _item(i: int) -> bytes:
    uid = hashlib.sha256(str(i).encode()).hexdigest()[:32]  # compresses like a real uid
    return json.dumps({"kind": "Pod", "metadata": {"name": f"pod-{i:07d}", "uid": uid},
                       "spec": {"containers": [{"image": "x" * 40, "args": ["a", "b\"c"]}]},
                       "status": {"phase": "Running", "ready": i % 3 == 0}},
                      separators=(",", ":")).encode() + b","


def json_stream(mib: int) -> tuple[Iterator[bytes], int]:
    """``{"items":[...]}`` of about ``mib`` MiB on one line, and how many items it holds."""
    block = _block(_item)
    per_block = block.count(b'"kind":"Pod"')
    last = b'{"kind":"Pod"}]}'

    def chunks() -> Iterator[bytes]:
        yield b'{"apiVersion":"v1","items":['
        for _ in range(mib):
            yield block
        yield last

    return chunks(), per_block * mib + 1


SHOWN: dict[str, int] = {}


def spill_seconds(root: Path, chunks: Iterator[bytes], kind: str = "") -> float:
    with Spiller(LocalStore(root), SESSION, journal=None) as spiller:
        start = time.perf_counter()
        result = spiller.externalize(chunks, "bash")
        took = time.perf_counter() - start
    assert result.spilled, result.degraded_reason
    assert spiller.policy.budget().fits(result.context_text)
    if kind:
        SHOWN[kind] = len(result.context_text)
    return took


def part_one(mib: int, runs: int, tmp: Path) -> None:
    kinds: dict[str, Callable[[], Iterator[bytes]]] = {
        "text": lambda: text_stream(mib), "ndjson": lambda: ndjson_stream(mib),
        "csv": lambda: csv_stream(mib), "json": lambda: json_stream(mib)[0]}
    typed: dict[str, list[float]] = {k: [] for k in kinds}
    plain: dict[str, list[float]] = {k: [] for k in kinds}
    real = job.detect
    try:
        for run in range(runs):
            for kind, make in kinds.items():
                # ABBA: alternate which goes first, so warm-up and disk state favour neither.
                for on in ((True, False) if run % 2 == 0 else (False, True)):
                    # off: the same bytes, taken for text (as before detection existed)
                    job.detect = real if on else (lambda *_a, **_k: TEXT)
                    (typed if on else plain)[kind].append(
                        spill_seconds(tmp / f"{kind}{run}{on}", make(), kind if on else ""))
    finally:
        job.detect = real
    print(f"spill of {mib} MiB, local store, median of {runs} (baseline: the same bytes with"
          " detection off, i.e. previewed as text):")
    for kind in kinds:
        t, b = statistics.median(typed[kind]), statistics.median(plain[kind])
        print(f"  {kind:<7} {t:6.2f} s vs {b:6.2f} s  x{t / b:.3f}  (+{t - b:5.2f} s);"
              f" context text {SHOWN[kind]:,} chars (budget: the policy's, as for text)")


def child(root: str, sid: str, what: str) -> None:
    """Run one read in this (child) process and print its figures as JSON."""
    counting = CountingStore(LocalStore(Path(root)))
    arts = ArtifactStore(counting, session_id=SESSION)
    start = time.perf_counter()
    if what == "stream":
        parsed = sum(len(chunk) for chunk in arts.iter_verified(sid))
        rows = 0
    else:
        page = arts.read_json(sid, what, limit=5)
        rows, parsed = len(page.rows), page.bytes_scanned
    took = time.perf_counter() - start
    print(json.dumps({"what": what, "s": round(took, 2), "fetched": counting.bytes_read,
                      "parsed": parsed, "rows": rows, "rss_mib": round(resource.getrusage(
                          resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))


def part_two(mib: int, tmp: Path) -> None:
    root = tmp / "json"
    chunks, items = json_stream(mib)
    ref = ArtifactStore(LocalStore(root), session_id=SESSION).write(
        SESSION, chunks, "bench", output_kind="json", output_description="JSON document")
    stored = ArtifactStore(LocalStore(root), session_id=SESSION).index(ref.source_id).stored_size
    print(f"JSON path reads on a {ref.size_bytes / MiB:,.0f} MiB one-line document ({items:,} items,"
          f" {stored / MiB:,.0f} MiB stored as zstd frames), each in a child process:")
    for what in ("stream", f"/items/{items - 2}", "/items/0"):
        proc = subprocess.run([sys.executable, __file__, "--child", str(root), ref.source_id, what],
                              capture_output=True, text=True, timeout=3600, check=True)
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        label = "stream all (baseline)" if what == "stream" else f"read_json({what!r})"
        print(f"  {label:<26} {got['s']:7.2f} s  fetched {got['fetched'] / MiB:8,.1f} MiB stored"
              f" = {got['parsed'] / MiB:8,.1f} MiB of JSON  peak RSS {got['rss_mib']:6.1f} MiB")


def _ndjson_blocks(mib: int) -> Iterator[bytes]:
    """``mib`` 1 MiB blocks of distinct records: record n is {"n": n, ...}."""
    n = 0
    for _ in range(mib):
        out = bytearray()
        while len(out) < MiB:
            out += b'{"n": %d, "msg": "event %d", "ok": %s}\n' % (n, n, b"true" if n % 3 else b"false")
            n += 1
        yield bytes(out)


def part_three(mib: int, tmp: Path) -> None:
    """A large NDJSON spill checked like a person would: counts, head, tail, last page."""
    records = sum(block.count(b"\n") for block in _ndjson_blocks(mib))
    with Spiller(LocalStore(tmp / "ndjson"), SESSION, journal=None) as spiller:
        start = time.perf_counter()
        result = spiller.externalize(_ndjson_blocks(mib), "bash")
        took = time.perf_counter() - start
    text = result.context_text
    found = re.search(r"Records: ([\d,]+); the preview shows records 1–([\d,]+) and ([\d,]+)–([\d,]+);"
                      r" ([\d,]+) records omitted", text)
    assert result.spilled and found, text[-600:]
    total, head_end, tail_start, tail_end, omitted = (int(g.replace(",", "")) for g in found.groups())
    preview = text[: text.rfind("\n[s3spill] ") + 1]
    head, rest = preview.split("\n[… ", 1)
    tail = rest.split("…]\n", 1)[1]
    heads = [json.loads(line)["n"] for line in head.splitlines()]
    tails = [json.loads(line)["n"] for line in tail.splitlines()]
    exact = (total == tail_end == records and heads == list(range(head_end))
             and tails == list(range(tail_start - 1, total))
             and omitted == total - head_end - (total - tail_start + 1))
    sid = re.search(r'source_id="([^"]+)"', text).group(1)  # type: ignore[union-attr]
    page = ArtifactStore(LocalStore(tmp / "ndjson"), session_id=SESSION).read_page(sid, offset=total - 5)
    last = [json.loads(line.text)["n"] for line in page.lines]
    print(f"NDJSON {mib} MiB ({records:,} records): spill {took:.1f} s, {len(text):,} chars of"
          f" context; records in the pointer exact: {exact}; last page records {last[0]:,}-{last[-1]:,}"
          f" == the last five: {last == list(range(total - 5, total))}; peak RSS"
          f" {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--json-mib", type=int, default=200)
    parser.add_argument("--ndjson-mib", type=int, default=0,
                        help="also spill this many MiB of NDJSON and check its pointer (part 3)")
    parser.add_argument("--child", nargs=3, metavar=("ROOT", "SID", "WHAT"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory(dir=str(ROOT)) as tmp:
        if args.mib:
            part_one(args.mib, args.runs, Path(tmp))
        if args.json_mib:
            part_two(args.json_mib, Path(tmp))
        if args.ndjson_mib:
            part_three(args.ndjson_mib, Path(tmp))


if __name__ == "__main__":
    main()
