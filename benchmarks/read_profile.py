"""Where a fresh ``s3spill read`` process spends its time, step by step, beside the plain read's steps.

    python benchmarks/read_profile.py [--runs 21] [--mib 1]

Each run is a fresh interpreter (as a model's page read is) that times, with
``perf_counter``, the steps of the CLI's fast read (:mod:`s3spill.cli.read_fast` and
:mod:`s3spill.cli.fast_artifact`, called step by step through their own functions) or of
the plain-Python reference read (:mod:`benchmarks.plain`: open, whole-file SHA-256,
decode, split); the two kinds of run
alternate, and each step's median over the runs is printed, with the interpreter's own
start (``python -c pass``, same interpreter) beside them. This is the profile behind the
read rows of ``benchmarks/costs.py`` (docs/benchmarks.md): what a masked read pays that a
plain read does not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = "profile"

OURS = r"""
import sys, time, json
T = [time.perf_counter()]
steps = {}
def lap(name):
    T.append(time.perf_counter()); steps[name] = (T[-1] - T[-2]) * 1e3
from s3spill.cli import read_fast; from s3spill.cli import fast_artifact as fa
lap("import the CLI and its fast read")
call = read_fast._parse(["read", SID, "--offset", MID, "--limit", "2000"])
lap("argv, environment, policy check")
import hashlib; lap("import hashlib (OpenSSL)")
from s3spill.artifacts import pagefill, index_fields, chunks; import json as _j
lap("import page, index and chunk checks, json")
shash, name = fa._source(call["source_id"])
objects = fa._store_objects(call["root"])
key = f"v1/sessions/{shash}/artifacts/{name}"
body = fa._open(objects, key); trailer = fa._trailer_at_end(body)
index = fa._index(fa._whole_object(objects, key + ".idx"), trailer, shash, name, SID)
lap("read and check the body's trailer and the index")
start, end = index.stored_before[0], index.stored_before[1]
body.seek(start); frame = body.read(end - start); lap("read the chunk's frame")
from s3spill.artifacts import zstd_light; zstd_light.backend(); lap("load zstd's C backend")
raw = chunks.decompress_frame(frame, (0, index.size_bytes), 0, SID); lap("decompress the chunk")
chunks.check_chunk(raw, 0, (0, index.size_bytes), index.chunk_sha256[0], index.chunk_newlines[0], SID)
lap("SHA-256 and newline count of the chunk")
from s3spill.context.secrets import triggers; lap("masking: import the trigger rules")
from s3spill.context.secrets.anchors import no_anchor; found = not no_anchor(raw)
lap("masking: anchor precheck")
import re2; lap("masking: import RE2")
first = triggers._sieve_union(); lap("masking: compile the sieves' union")
hit = first(raw) is not None; lap("masking: sieves' scan")
if hit:
    loose = triggers._union(False); lap("masking: compile the prefilters' union")
    hit = loose(raw) is not None; lap("masking: prefilters' scan")
if hit:
    exact = triggers._union(True); lap("masking: compile the exact union")
    hit = exact(raw) is not None; lap("masking: exact scan")
lines, eof, nxt, _, _ = pagefill.fill(index, lambda k: raw, SID, offset=int(MID), limit=2000)
text = "\n".join(pagefill.row(n, e, t) for n, _, t, e, _, _ in lines); lap("fill and render the page")
from s3spill.cli.usage_fast import record_read
record_read(call["root"], call["session"], SID, "read", text, {"size_bytes": index.size_bytes})
lap("write the usage event")
print(json.dumps(steps))
"""

PLAIN = r"""
import sys, time, json
T = [time.perf_counter()]
steps = {}
def lap(name):
    T.append(time.perf_counter()); steps[name] = (T[-1] - T[-2]) * 1e3
import fcntl, hashlib, json as _j, os, re; lap("import hashlib, json, re, fcntl")
with open(PATH, "rb") as fh:
    data = fh.read()
lap("read the file")
assert hashlib.sha256(data).hexdigest() == SHA; lap("SHA-256 of the file")
text = data.decode("utf-8"); lap("decode")
lines = text.splitlines(); lap("split lines")
page = "\n".join(lines[int(MID):int(MID) + 2000]) + "\n"; lap("join the page")
print(json.dumps(steps))
"""


def _env(store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3SPILL_")}
    env.update(PYTHONPATH=str(ROOT), S3SPILL_STORE=str(store), S3SPILL_SESSION=SESSION)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--mib", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from benchmarks.read_bench import log_lines
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.store.local import LocalStore

    with tempfile.TemporaryDirectory(prefix="s3spill-read-profile-") as tmp:
        store = Path(tmp, "store")
        data = b"".join(log_lines(args.mib << 20, match_every=50))
        plain_file = Path(tmp, "plain.log")
        plain_file.write_bytes(data)
        ref = ArtifactStore(LocalStore(store), session_id=SESSION).write(SESSION, [data], "bench")
        mid = str(ref.line_count // 2)
        env = _env(store)
        ours = f"SID = {ref.source_id!r}; MID = {mid!r}\n" + OURS
        plain = f"PATH = {str(plain_file)!r}; SHA = {ref.sha256!r}; MID = {mid!r}\n" + PLAIN
        got: dict[str, dict[str, list[float]]] = {"ours": {}, "plain": {}, "pass": {}}
        for run in range(args.runs + 1):
            for side, code in (("ours", ours), ("plain", plain), ("pass", "pass")):
                start = time.perf_counter()
                out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                     check=True).stdout
                wall = (time.perf_counter() - start) * 1e3
                if run == 0:
                    continue  # warm-up
                steps = json.loads(out) if out.strip() else {}
                steps["whole process (wall)"] = wall
                for name, ms in steps.items():
                    got[side].setdefault(name, []).append(ms)
    load = os.getloadavg()
    print(f"medians of {args.runs} fresh processes each, interleaved; load average {load[0]:.2f}"
          f" {load[1]:.2f} {load[2]:.2f}\n")
    for side in ("pass", "plain", "ours"):
        print(f"| {side} step | ms |\n|---|---|")
        for name, values in got[side].items():
            print(f"| {name} | {statistics.median(values):.2f} |")
        print()


if __name__ == "__main__":
    main()
