"""The trigger pass: which lines of a text can hold a secret, and which rules to run there.

Why two engines: every byte of an ``at_rest`` stream goes through this pass, and RE2 (one
DFA over the union of the triggers, restarted at each candidate, the GIL held) runs at
~150-250 MB/s here, about as long as the whole spill without masking. Hyperscan (Intel's
SIMD multi-pattern matcher; the ``hyperscan`` extra) scans a chunk once for all the
triggers at ~1 GB/s with the GIL released, and says *which* trigger matched where, so the
per-line RE2 set match goes too. When it is not installed (or cannot compile a trigger),
RE2 does the same job: both answer the same candidate lines with the same rule sets
(tests/context/secrets/test_engine.py compares them).

Candidates are whole lines: a trigger never spans a newline, and a match is reported by
its end, so the line holding a match's last byte is the line the trigger matched in.
Each rule has a *trigger* (the exact necessary condition, per line) and a *prefilter* (the
same or looser, cheaper over every byte); where they differ, a line the prefilter finds
runs the rule only if its trigger matches the line too. Pure: no I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Candidate", "HyperscanEngine", "Re2Engine", "TriggerEngine", "make_engine"]

#: One candidate line: ``(start, end, rule indices)``; ``end`` is the newline's offset (or
#: the end of the scanned range) and the indices are those whose trigger matched in it.
Candidate = tuple[int, int, frozenset[int]]


class TriggerEngine:
    """The interface: candidate lines of ``data[pos:end]``, in order."""

    name = "none"

    def candidates(self, data: bytes, pos: int, end: int) -> list[Candidate]:
        raise NotImplementedError


#: A rule's pair of patterns: ``(trigger, prefilter)``.
Patterns = tuple[str, str]


def _unique(patterns: Sequence[str]) -> tuple[list[str], list[frozenset[int]]]:
    """Distinct patterns, and for each the rules that share it."""
    found: dict[str, set[int]] = {}
    for index, pattern in enumerate(patterns):
        found.setdefault(pattern, set()).add(index)
    return list(found), [frozenset(v) for v in found.values()]


def _re2_options() -> Any:
    import re2

    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1  # bytes: ``[\x80-\xff]`` is any non-ASCII byte
    opts.max_mem = 64 << 20
    opts.never_capture = True  # bounds only: submatches would cost an NFA run per match
    return opts


def _searcher(regexp: Any) -> Callable[[bytes, int, int], int]:
    """``search(data, pos, stop)`` -> where the first match starts, -1 if none.

    The binding's ``search`` wraps each call in a generator and a match object, which
    costs three times the search itself on a candidate-rich log; its compiled regexp
    answers spans directly (used when this version of google-re2 exposes it).
    """
    import re2

    raw, anchor = getattr(regexp, "_regexp", None), getattr(re2, "_Anchor", None)
    if raw is not None and anchor is not None:
        match, unanchored = raw.Match, anchor.UNANCHORED
        return lambda data, pos, stop: int(match(unanchored, data, pos, stop)[0][0])

    def search(data: bytes, pos: int, stop: int) -> int:
        m = regexp.search(data, pos, stop)
        return -1 if m is None else int(m.start())

    return search


class Re2Engine(TriggerEngine):
    """The union of the triggers as one RE2 DFA, then an RE2 set per candidate line."""

    name = "re2"

    def __init__(self, rules: Sequence[Patterns]) -> None:
        import re2

        opts = _re2_options()

        def union(patterns: Sequence[str]) -> Callable[[bytes, int, int], int]:
            alternatives = "|".join(f"(?:{p})" for p in dict.fromkeys(patterns))
            return _searcher(re2.compile(alternatives.encode(), opts))

        #: Where some trigger matches (exact: a long line's windows start there) ...
        self._exact = union([t for t, _ in rules])
        #: ... and where some prefilter does (the pass over every byte: cheaper).
        self._loose = union([p for _, p in rules]) if any(t != p for t, p in rules) else self._exact
        self._set = re2.Set.SearchSet(opts)
        for trigger, _ in rules:
            self._set.Add(trigger.encode())
        self._set.Compile()

    def next_candidate(self, data: bytes, pos: int, stop: int) -> int:
        """Where the next trigger match starts in ``data[pos:stop]``; -1 if none."""
        return self._exact(data, pos, stop)

    def hits(self, line: bytes) -> frozenset[int]:
        """The rules whose trigger matches somewhere in ``line``."""
        return frozenset(self._set.Match(line) or ())

    def candidates(self, data: bytes, pos: int, end: int) -> list[Candidate]:
        out: list[Candidate] = []
        while pos < end:
            at = self._loose(data, pos, end)
            if at < 0:
                break
            start = max(pos, data.rfind(b"\n", 0, at) + 1)
            nl = data.find(b"\n", at, end)
            stop = end if nl < 0 else nl
            hits = self.hits(data[start:stop])
            if hits:  # none: only a looser prefilter matched
                out.append((start, stop, hits))
            pos = stop + 1
        return out


#: Lines up to this long have their confirmations remembered, this many at most.
_CACHED_LINE = 512
_CACHED_LINES = 4096


def _collect(_id: int, _from: int, to: int, _flags: int, found: list[int]) -> None:
    found.append(to << 8 | _id)  # one int per match: the callback runs once per match end


class HyperscanEngine(TriggerEngine):
    """All the triggers in one Hyperscan block-mode database; one scan per text."""

    name = "hyperscan"

    def __init__(self, rules: Sequence[Patterns]) -> None:
        import hyperscan
        import re2

        from s3spill.context.secrets.triggers import prefilter_parts

        distinct, of_pattern = _unique([p for _, p in rules])
        # A prefilter may be several expressions (cheaper than their union): each reports
        # for the rules of its prefilter.
        patterns = [part for p in distinct for part in prefilter_parts(p)]
        self._rules = [rules_ for p, rules_ in zip(distinct, of_pattern, strict=True)
                       for _ in prefilter_parts(p)]
        if len(patterns) > 255:
            raise ValueError("more distinct triggers than a match id's 8 bits")
        self._hs = hyperscan
        # Any: the stub types ``scan``'s data as str/bytes; a memoryview (no copy) works too.
        self._db: Any = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=[p.encode() for p in patterns], ids=list(range(len(patterns))),
                         elements=len(patterns), flags=[0] * len(patterns))
        self._local = threading.local()  # a scratch per thread: one scan at a time each
        #: Rules whose prefilter is looser than their trigger: the trigger, to confirm.
        self._confirm = {i: _searcher(re2.compile(t.encode(), _re2_options()))
                         for i, (t, p) in enumerate(rules) if t != p}
        #: Per Hyperscan expression, the rules it reports for, as bits (``1 << rule``).
        self._masks = [sum(1 << i for i in rules_) for rules_ in self._rules]
        self._answers: dict[tuple[bytes, int], frozenset[int]] = {}

    def _scratch(self) -> Any:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._db)
        return scratch

    def candidates(self, data: bytes, pos: int, end: int) -> list[Candidate]:
        if pos >= end:
            return []
        found: list[int] = []
        view = memoryview(data)[pos:end] if pos or end != len(data) else data
        self._db.scan(view, match_event_handler=_collect, context=found, scratch=self._scratch())
        if not found:
            return []
        found.sort()
        out: list[Candidate] = []
        masks, line_stop, bits, start = self._masks, -1, 0, 0
        for packed in found:
            last = pos + (packed >> 8) - 1  # the match's last byte
            if last > line_stop:
                if bits:
                    self._line(out, data, start, line_stop, bits)
                start = max(pos, data.rfind(b"\n", 0, last) + 1)
                nl = data.find(b"\n", last, end)
                line_stop, bits = (end if nl < 0 else nl), 0
            bits |= masks[packed & 0xFF]
        if bits:
            self._line(out, data, start, line_stop, bits)
        return out

    def _line(self, out: list[Candidate], data: bytes, start: int, stop: int, bits: int) -> None:
        """Add the candidate line ``data[start:stop]`` whose prefilters ``bits`` matched, with
        the rules whose exact trigger matches it too (none: not a candidate).

        Remembered for short lines: a log repeats its lines (the prefilters match
        ``PATH=/usr/local/sbin:…`` of every env dump), and the answer depends on the
        line's bytes and the prefilters that matched alone."""
        hits: frozenset[int] | None
        if stop - start > _CACHED_LINE:
            hits = self._confirmed(data, start, stop, bits)
        else:
            key = (data[start:stop], bits)
            hits = self._answers.get(key)
            if hits is None:
                if len(self._answers) >= _CACHED_LINES:
                    self._answers.clear()  # bounded; clearing now and then is cheaper than an LRU
                hits = self._answers[key] = self._confirmed(data, start, stop, bits)
        if hits:
            out.append((start, stop, hits))

    def _confirmed(self, data: bytes, start: int, stop: int, bits: int) -> frozenset[int]:
        """The rules of ``bits`` whose trigger matches ``data[start:stop]`` (those whose
        prefilter is their trigger match by being there)."""
        confirm = self._confirm
        return frozenset(i for i in range(bits.bit_length()) if bits >> i & 1
                         and (i not in confirm or confirm[i](data, start, stop) >= 0))


def make_engine(rules: Sequence[Patterns], prefer: str | None = None) -> TriggerEngine:
    """Hyperscan when it is installed and compiles every trigger, else RE2 (``prefer``
    forces one: the tests compare them)."""
    if prefer in (None, "hyperscan"):
        try:
            return HyperscanEngine(rules)
        except Exception:
            if prefer == "hyperscan":
                raise
    return Re2Engine(rules)
