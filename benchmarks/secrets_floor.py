"""What a candidate pass for ``at_rest`` masking can cost at best, approach by approach (issue 31).

``at_rest`` < 10 % over ``off`` on the 200 MiB build log of secrets_bench.py needs the
whole masking pass (finding candidates, confirming them, handing chunks to the worker)
to cost about 1 ms of CPU per MiB: ``off`` already keeps both cores busy. This measures,
in CPU milliseconds per MiB of this thread (best of ``--reps``), the pieces any such
scheme is made of, on the bench's generated log and, with ``--corpus DIR``, on
secrets_corpus.py's captured outputs:

- floors: SHA-256; Hyperscan on one and on forty literals that never occur; a copy of
  each MiB into a shared map (the worker's hand-over) and into a fresh ``bytes``;
- today's pass: the Hyperscan scan of every prefilter (no callback), the entropy rule's
  expressions and the others' alone, with the match callback, the candidate lines,
  and the whole StreamRedactor;
- Hyperscan modes: HS_FLAG_SINGLEMATCH (a lower bound: it says only *whether* a chunk
  matches), HS_FLAG_PREFILTER;
- literal-led forms: the literals every match of each non-entropy rule contains, for
  Teddy/FDR, and the matches they report (each a per-candidate check to pay for);
  what the rules without such a literal start at (``[:=]``, ``:``, ``.``) alone;
- C-speed builtins: ``bytes.translate`` to a class alphabet, ``count`` of a run of 20
  base64-class bytes in it, ``lower``, ``find`` of a literal, ``count`` of newlines;
- a gate per block: the share of 64 KiB and 1 MiB blocks with no candidate line (what
  the worker would be spared if it ran only on the blocks the gate cannot clear).

The load average is printed: the machine is shared.

    python benchmarks/secrets_floor.py [--mib 20] [--reps 5] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import mmap
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks.secrets_profile import _best  # noqa: E402  (best of N, in this thread's CPU time)
from s3spill.context.secrets import StreamRedactor, trigger_build, triggers  # noqa: E402
from s3spill.context.secrets.detector import SecretDetector  # noqa: E402
from s3spill.context.secrets.engine import _collect  # noqa: E402
from tests.context.secrets.clean_build_logs import build_log  # noqa: E402

MiB = 1 << 20


def _product(*parts: Sequence[str]) -> list[str]:
    return ["".join(p) for p in itertools.product(*parts)]


#: Literals every match of each rule but the entropy rule, Telegram's and Discord's
#: contains (their triggers, as finite sets): (literal, caseless).
LITERALS: list[tuple[str, bool]] = [
    *((s, False) for s in ("PRIVATE KEY", "PuTTY-User-Key-File", "Private-MAC", "A3T", "ABIA", "ACCA", "AKIA",
                           "ASIA", "AccountKey=", "://", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "GR1348941",
                           "eyJ", "_authToken", "T3BlbkFJ", "pypi-AgE", "SG.", "sq0csp-", "k_live_", "AKC",
                           "AC", "SK")),
    *((f"AP{c}", False) for c in "0123456789ABCDEF"),
    *((f"-us{d}", False) for d in range(10)),
    *((f"gl{x}-", False) for x in ("pat", "dt", "ft", "soat", "rt", "cbt", "imt", "ptt", "agent", "oas")),
    *((s, True) for s in ("aws", "hooks.slack.com", "cloudant", "softlayer", "key", "pwd", "pass", "token")),
    *((f"xox{c}-", True) for c in "abposr"),
    *((s, True) for s in _product(["cl", "clou", "cloudant"], ["", "_", "-"], ["", "api"], ["", "_", "-"],
                                  ["key", "pwd", "pw", "pass", "token"])),
    *((s, True) for s in _product(["sl"], ["", "_", "-"], ["", "api"], ["", "_", "-"],
                                  ["key", "pwd", "pass", "token"])),
    *((s, True) for s in _product(["secret"], ["", "_", "-"], ["", "access"], ["", "_", "-"], ["key"])),
    *((s, True) for s in ("passwd", "password", "secret", "contrase")),
]


def _database(patterns: Sequence[tuple[bytes, int]]) -> tuple[Any, Any]:
    import hyperscan

    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[p for p, _ in patterns], ids=list(range(len(patterns))), elements=len(patterns),
               flags=[f for _, f in patterns])
    return db, hyperscan.Scratch(db)


class Bench:
    """The chunks of one text and the figures measured on them."""

    def __init__(self, name: str, data: bytes, reps: int) -> None:
        self.chunks = [data[i:i + MiB] for i in range(0, len(data), MiB)]
        self.mib, self.reps = len(data) / MiB, reps
        lines = data.count(b"\n")
        print(f"== {name}: {self.mib:.1f} MiB, {lines / self.mib:,.0f} lines, "
              f"{data.count(b':') / self.mib:,.0f} ':', {data.count(b'=') / self.mib:,.0f} '=', "
              f"{data.count(b'.') / self.mib:,.0f} '.' per MiB; load {os.getloadavg()}")

    def row(self, name: str, run: Callable[[bytes], object], note: str = "") -> None:
        took = _best(lambda: [run(c) for c in self.chunks], self.reps)
        print(f"  {name:52s} {took / self.mib * 1e3:6.3f} ms/MiB {note}")

    def hyperscan(self, name: str, patterns: Sequence[str | tuple[str, int]], flags: int = 0) -> None:
        """The scan without a callback, and how many matches a callback would see."""
        pats = [(p.encode(), flags) if isinstance(p, str) else (p[0].encode(), p[1] | flags)
                for p in patterns]
        try:
            db, scratch = _database(pats)
        except Exception as exc:  # noqa: BLE001 - a mode that rejects an expression: say so
            print(f"  {name:52s} does not compile: {exc}")
            return
        found: list[int] = []
        for c in self.chunks:
            db.scan(c, match_event_handler=_collect, context=found, scratch=scratch)
        self.row(name, lambda c: db.scan(c, scratch=scratch),
                 f"({len(found) / self.mib:,.0f} matches/MiB, {len(pats)} expressions)")


def _ignore(_id: int, _from: int, _to: int, _flags: int, _context: object) -> None:
    """A match callback that does nothing (the Python call per match is what it costs)."""


def _literal(text: str, caseless: bool) -> tuple[str, int]:
    import hyperscan

    return re.escape(text), hyperscan.HS_FLAG_CASELESS if caseless else 0


def floors(b: Bench) -> None:
    print(" floors")
    b.row("sha256", lambda c: hashlib.sha256(c).digest())
    b.hyperscan("Hyperscan, one literal that never occurs", ["zqzqzq"])
    b.hyperscan("Hyperscan, 40 literals that never occur", [f"zq{i:02d}zq" for i in range(40)])
    shared = mmap.mmap(-1, MiB)
    b.row("copy into a shared map (the worker's hand-over)",
          lambda c: shared.__setitem__(slice(0, len(c)), c))
    b.row("copy into a fresh bytes (page faults)", lambda c: bytes(memoryview(c)[1:]))


def today(b: Bench, detector: SecretDetector) -> None:
    import hyperscan

    engine: Any = detector.engine
    parts: list[str] = [p for k in triggers.TRIGGERS for p in triggers.prefilter_parts(triggers.prefilter(k))]
    entropy = list(triggers.PREFILTER_PARTS["high-entropy"])
    print(" today's pass")
    b.hyperscan("Hyperscan, every prefilter", parts)
    b.hyperscan("  the entropy rule's expressions alone", entropy)
    b.hyperscan("  every other rule's alone", [p for p in parts if p not in entropy])
    found: list[int] = []
    b.row("  + the match callback", lambda c: engine._db.scan(c, match_event_handler=_collect, context=found,
                                                              scratch=engine._scratch()))
    b.row("  + candidate lines (confirmed)", lambda c: engine.candidates(c, 0, len(c)))
    b.row("whole StreamRedactor (one stream)", StreamRedactor(detector).push)
    print(" Hyperscan modes")
    b.hyperscan("HS_FLAG_SINGLEMATCH, every prefilter (a lower bound)", parts, hyperscan.HS_FLAG_SINGLEMATCH)
    b.hyperscan("HS_FLAG_PREFILTER, every prefilter", parts, hyperscan.HS_FLAG_PREFILTER)
    b.hyperscan("HS_FLAG_PREFILTER, the entropy rule's", entropy, hyperscan.HS_FLAG_PREFILTER)
    stream = hyperscan.Database(mode=hyperscan.HS_MODE_STREAM)
    stream.compile(expressions=[p.encode() for p in parts], ids=list(range(len(parts))), elements=len(parts),
                   flags=[0] * len(parts))
    stream_scratch = hyperscan.Scratch(stream)

    def streamed() -> None:
        with stream.stream(match_event_handler=_ignore) as s:
            for c in b.chunks:
                s.scan(c, scratch=stream_scratch)

    took = _best(streamed, b.reps)
    print(f"  {'stream mode, every prefilter, the match callback':52s} {took / b.mib * 1e3:6.3f} ms/MiB")
    line = b.chunks[0][:b.chunks[0].find(b"\n")]
    scratch = engine._scratch()
    per_call = _best(lambda: [engine._db.scan(line, scratch=scratch) for _ in range(10_000)], b.reps)
    lines = sum(c.count(b"\n") for c in b.chunks) / b.mib
    print(f"  {'one scan per line: the calls alone':52s} {per_call / 10_000 * lines * 1e3:6.3f} ms/MiB"
          f" ({per_call / 10_000 * 1e6:.2f} us per call of a {len(line)}-byte line)")


def literal_led(b: Bench) -> None:
    print(" literal-led forms (Teddy/FDR) and what the others start at")
    b.hyperscan("the literals of every rule but three", [_literal(s, c) for s, c in LITERALS])
    b.hyperscan("  of them caseless key/pwd/pass/token alone", [_literal(s, True) for s in
                                                                 ("key", "pwd", "pass", "token")])
    b.hyperscan("  of them AC/SK/AP[0-9A-F] alone", [_literal(s, False) for s in
                                                     ("AC", "SK", *(f"AP{c}" for c in "0123456789ABCDEF"))])
    b.hyperscan("[:=] alone (where the entropy rule starts)", ["[:=]"])
    b.hyperscan(": alone (Telegram's)", [":"])
    b.hyperscan(r"\. alone (Discord's)", [r"\."])
    b64 = trigger_build._B64
    b.hyperscan("[:=] and 20 base64 (no letter past f asked)", [f"[:=]{b64}{{20}}"])
    hexish, past_f = trigger_build._HEXISH, trigger_build._X
    b.hyperscan("[:=], hex, a letter past f", [f"[:=][ \\t]*[\"'`]?{hexish}{{0,19}}{past_f}"])


def builtins(b: Bench) -> None:
    classes = bytearray(b"." * 256)
    for ch in trigger_build._B64_CHARS.encode():
        classes[ch] = ord("b")
    table = bytes(classes)
    translated = [c.translate(table) for c in b.chunks]
    runs = sum(t.count(b"b" * 20) for t in translated) / b.mib
    print(" C-speed builtins")
    b.row("bytes.translate to a 2-class alphabet", lambda c: c.translate(table))
    it = itertools.cycle(translated)
    b.row("count of 20 base64-class bytes in it", lambda c: next(it).count(b"b" * 20),
          f"({runs:,.0f} runs/MiB)")
    b.row("bytes.lower (for caseless literals)", bytes.lower)
    b.row("bytes.find of one literal (AKIA)", lambda c: c.find(b"AKIA"))
    b.row("bytes.count of newlines", lambda c: c.count(b"\n"))


def gate(b: Bench, detector: SecretDetector) -> None:
    print(" a gate per block: blocks with no candidate line (the worker spared)")
    for size in (64 << 10, MiB):
        blocks = [c[i:i + size] for c in b.chunks for i in range(0, len(c), size)]
        clear = sum(not detector.engine.candidates(x, 0, len(x)) for x in blocks)
        print(f"  blocks of {size >> 10} KiB: {clear} of {len(blocks)} clear ({clear / len(blocks):.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--corpus", help="a directory of captured outputs (secrets_corpus.py --dir)")
    args = parser.parse_args()
    detector = SecretDetector("hyperscan")
    StreamRedactor(detector).push(build_log(4 * MiB))  # warm: the library's rules loaded
    texts = {"generated build log": build_log(args.mib * MiB)}
    if args.corpus:
        texts["captured corpus"] = b"".join(p.read_bytes() for p in sorted(Path(args.corpus).iterdir()))
    for name, data in texts.items():
        b = Bench(name, data, args.reps)
        floors(b)
        today(b, detector)
        literal_led(b)
        builtins(b)
        gate(b, detector)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
