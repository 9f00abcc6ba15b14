"""What the one untried route for ``at_rest`` masking, native code, would cost at best (issue 31).

``at_rest`` < 10 % over ``off`` needs the whole masking pass at about 1 ms of CPU per MiB
(secrets_floor.py's docstring says why). No library route reaches it (Hyperscan's exact scan
alone is 4.1-4.5 ms per MiB, docs/fleet.md), so the last route is a hand-written native
detector. This measures what such a detector's single most common rule costs in C: the
high-entropy rule (``values.entropy_spans``: a name of three characters, ``:`` or ``=``,
a value of 20 or more base64-alphabet bytes, digests skipped, 23 distinct bytes, then
Shannon entropy over 4.5 bits), scalar, ``-O3 -march=native``, one pass with no Python per
match, beside two floors in the same run: SHA-256 (``hashlib``) and a C pass that only
counts the ``:`` and ``=`` bytes. The sketch is looser than the rule (no secret-name limit,
no sequence or placeholder check, names not bounded at 64), so it confirms more values, not
fewer; it must find what the Python rule finds on the same text (printed: the generated
build log, which holds none, with 100 planted random 40-character values per MiB). Each
figure is CPU ms per MiB of this thread, best of ``--reps``.

    python benchmarks/secrets_native_floor.py [--mib 20] [--reps 9]

Needs a C compiler (``cc``); the library is built into a temporary directory.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from s3spill.context.secrets.values import entropy_spans  # noqa: E402
from tests.context.secrets.clean_build_logs import build_log  # noqa: E402

MiB = 1 << 20

SOURCE = r"""
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
static unsigned char B64[256], NAME[256];
void init(void) {
  const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-";
  for (const char *p = a; *p; p++) B64[(unsigned char)*p] = 1;
  const char *n = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-";
  for (const char *p = n; *p; p++) NAME[(unsigned char)*p] = 1;
}
static int lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
static int starts(const unsigned char *s, size_t n, const char *p) {
  for (size_t i = 0; p[i]; i++) if (i >= n || lower(s[i]) != p[i]) return 0;
  return 1;
}
static int digest(const unsigned char *s, size_t n) {
  static const char *sha[] = {"sha1", "sha224", "sha256", "sha384", "sha512"};
  if (starts(s, n, "md5-") || starts(s, n, "md5:") || starts(s, n, "h1:")) return 1;
  for (int k = 0; k < 5; k++) {
    size_t len = strlen(sha[k]);
    if (starts(s, n, sha[k]) && n > len && (s[len] == '-' || s[len] == ':' || s[len] == '_')) return 1;
  }
  return 0;
}
size_t count_assign(const unsigned char *s, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += (s[i] == ':') | (s[i] == '=');
  return c;
}
size_t entropy_rule(const unsigned char *s, size_t n, size_t *candidates) {
  size_t hits = 0, cand = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != ':' && s[i] != '=') continue;
    size_t j = i;
    while (j > 0 && (s[j - 1] == ' ' || s[j - 1] == '\t')) j--;
    if (j > 0 && (s[j - 1] == '"' || s[j - 1] == '\'')) j--;
    size_t k = j, len = 0;
    while (k > 0 && NAME[s[k - 1]] && len < 3) { k--; len++; }
    if (len < 3) continue;
    size_t v = i + 1;
    while (v < n && (s[v] == ' ' || s[v] == '\t')) v++;
    if (v < n && (s[v] == '"' || s[v] == '\'' || s[v] == '`')) v++;
    size_t e = v;
    while (e < n && B64[s[e]]) e++;
    if (e - v < 20) continue;
    if (digest(s + v, n - v)) { i = e - 1; continue; }
    cand++;
    uint64_t m0 = 0, m1 = 0;
    for (size_t q = v; q < e; q++) { if (s[q] < 64) m0 |= 1ULL << s[q]; else m1 |= 1ULL << (s[q] - 64); }
    if (__builtin_popcountll(m0) + __builtin_popcountll(m1) < 23) { i = e - 1; continue; }
    unsigned cnt[128];
    memset(cnt, 0, sizeof cnt);
    for (size_t q = v; q < e; q++) cnt[s[q]]++;
    double h = 0, total = (double)(e - v);
    for (int c = 0; c < 128; c++) if (cnt[c]) { double p = cnt[c] / total; h -= p * log2(p); }
    if (h > 4.5) hits++;
    i = e - 1;
  }
  *candidates = cand;
  return hits;
}
"""


def _build(directory: Path) -> ctypes.CDLL:
    """The sketch as a shared library (``cc`` on PATH; the flags a native wheel would use at best)."""
    (directory / "floor.c").write_text(SOURCE)
    library = directory / "floor.so"
    subprocess.run(["cc", "-O3", "-march=native", "-shared", "-fPIC", "-o", str(library),
                    str(directory / "floor.c"), "-lm"], check=True)
    lib = ctypes.CDLL(str(library))
    lib.init()
    lib.count_assign.restype = ctypes.c_size_t
    lib.entropy_rule.restype = ctypes.c_size_t
    return lib


def _best(run: Callable[[], object], reps: int, mib: float) -> float:
    """CPU ms per MiB of this thread, best of ``reps``."""
    best = float("inf")
    for _ in range(reps):
        start = time.thread_time()
        run()
        best = min(best, time.thread_time() - start)
    return best * 1e3 / mib


def _planted(data: bytes, per_mib: int) -> bytes:
    """``data`` with ``per_mib`` random high-entropy assignments per MiB, each on a line of its own."""
    rng = random.Random(31)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    lines = data.split(b"\n")
    step = max(1, len(lines) * MiB // (len(data) * per_mib))
    for at in range(len(lines) - 1, 0, -step):
        value = "".join(rng.choice(alphabet) for _ in range(40))
        lines.insert(at, f"deploy_value = {value}".encode())
    return b"\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=20)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    if shutil.which("cc") is None:
        sys.exit("secrets_native_floor.py needs a C compiler (cc) on PATH")
    data = _planted(build_log(args.mib * MiB), 100)
    mib = len(data) / MiB
    python_hits = sum(len(entropy_spans(line)) for line in data.decode().splitlines())
    with tempfile.TemporaryDirectory() as tmp:
        lib = _build(Path(tmp))
        buf = ctypes.create_string_buffer(data, len(data))
        candidates = ctypes.c_size_t()
        print(f"load average at start: {os.getloadavg()}; {mib:.1f} MiB of the generated build log")
        rows = {
            "SHA-256 (hashlib)": lambda: hashlib.sha256(data).digest(),
            "C: count ':' and '=' bytes": lambda: lib.count_assign(buf, len(data)),
            "C: the high-entropy rule, trigger and confirmation":
                lambda: lib.entropy_rule(buf, len(data), ctypes.byref(candidates)),
        }
        for name, run in rows.items():
            print(f"{name:<55} {_best(run, args.reps, mib):6.3f} ms/MiB")
        hits = lib.entropy_rule(buf, len(data), ctypes.byref(candidates))
    print(f"values confirmed per MiB: {candidates.value / mib:.0f}; found: C {hits}, "
          f"the Python rule {python_hits}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
