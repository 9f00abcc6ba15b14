"""Credentials kept out of the model's context: find them, mask them in place.

Tool output is where secrets turn up (``env``, ``cat .env``, ``kubectl get secret -o
yaml``, a failing ``git clone https://user:token@…``), and whatever a preview shows goes
to a model provider. The detectors are Yelp's ``detect-secrets`` (cloud keys, tokens of
twenty services, private keys, passwords in URLs, secret-sounding assignments), plus one
rule of ours on top of its entropy measure: an assignment whose value is long and
high-entropy (``AWS_SESSION_TOKEN=…``). Its IP-address and quoted-hex-string plugins
are left out: on build logs they flag commit ids and addresses, not secrets.

Why a prefilter: ``detect-secrets`` runs about thirty Python regexes per line (~0.5 ms),
far too slow for a gigabyte log. Every rule has a *trigger* that any line it could flag
matches (the library's own patterns, made RE2-compatible by dropping look-arounds, which
only widens them); one RE2 pass over a chunk (hundreds of MB/s) finds candidate lines,
an RE2 set says which rules to run there, and only those run.

What to do with a finding — masks that keep byte lengths, private key blocks, streams —
is :mod:`s3spill.context.secrets.masking`'s. Pure: no I/O.

Whether a matched value is a secret (entropy, placeholders, code) is
:mod:`s3spill.context.secrets.values`'s.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from s3spill.context.secrets.engine import Candidate, Re2Engine, TriggerEngine, make_engine
from s3spill.context.secrets.triggers import PREFILTERS, TRIGGERS, may_hold_secret
from s3spill.context.secrets.values import code_value, dummy_url, entropy_spans, plain_value, shannon_entropy

__all__ = ["LIBRARY_VERSION", "TRIGGERS", "Finding", "SecretDetector", "default_detector", "library_version",
           "may_hold_secret", "shannon_entropy"]

#: Kind names for detect-secrets' secret types where its own name is long or unclear.
_KIND_NAMES = {
    "AWS Access Key": "aws-key",
    "Basic Auth Credentials": "url-password",
    "Private Key": "private-key",
    "Secret Keyword": "password",
    "JSON Web Token": "jwt",
    "Azure Storage Account access key": "azure-key",
    "NPM tokens": "npm-token",
    "Square OAuth Secret": "square-secret",
}
#: Not run as plugins: IP addresses and quoted hex strings flag build logs' addresses and
#: commit ids; keywords and entropy have rules of their own below; private keys are
#: masked as whole blocks (:class:`_LineMasker`).
_SKIPPED = {"Public IP (ipv4)", "Hex High Entropy String", "Base64 High Entropy String", "Secret Keyword",
            "Private Key"}

@dataclass(frozen=True)
class Finding:
    """One detected secret: its kind and its span (byte offsets in the scanned line)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class _Rule:
    kind: str
    trigger: str
    find: Callable[[str], Iterable[tuple[int, int]]]


def _no_spans(line: str) -> tuple[tuple[int, int], ...]:
    """A key block has no span in a line: the masker masks it from BEGIN to END."""
    return ()


#: The detect-secrets release whose plugins :data:`TRIGGERS` covers, kind by kind (tests
#: check it against the installed one); any other release makes the detector load the
#: library's rules at once (see :class:`SecretDetector`).
LIBRARY_VERSION = "1.5.0"


def library_version() -> str | None:
    """The installed detect-secrets' version, read from its ``__version__.py`` without
    importing the package (its import is what a lazy detector saves); None if unknown."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("detect_secrets")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or ()) if spec is not None else ():
        try:
            with open(os.path.join(folder, "__version__.py"), encoding="utf-8") as fh:
                found = re.search(r"""VERSION\s*=\s*['"]([^'"]+)['"]""", fh.read())
        except OSError:
            continue
        return found.group(1) if found else None
    return None


def _kind(secret_type: str) -> str:
    return _KIND_NAMES.get(secret_type) or re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def _re2_compatible(pattern: str) -> str:
    """The pattern without what RE2 lacks; dropping look-arounds only widens it."""
    pattern = pattern.replace(r"(?:(?<=\W)|(?<=^))", "")
    pattern = re.sub(r"\(\?!(?:\\w|\[[^\]()]*\])\)", "", pattern)
    return re.sub(r"\{(\d+),\d{4,}\}", r"{\1,}", pattern)


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    """The secret inside a library pattern's match: its last group of six or more
    characters (the key after ``aws_secret_access_key=``), else the whole match."""
    for g in range(match.re.groups, 0, -1):
        s, e = match.span(g)
        if s >= 0 and e - s >= 6:
            return s, e
    return match.span()


class SecretDetector:
    """The rules, their triggers and the trigger pass; thread-safe once built.

    ``engine``: ``"hyperscan"`` or ``"re2"`` for the pass over every byte (default: RE2,
    and Hyperscan, when it is installed, once a large text asked for it: :meth:`want_fast`).

    Why the library's rules are loaded on demand: detect-secrets' import (with ``requests``)
    is most of the detector's cost (~0.2 s in a fresh process), and a log whose lines only
    ever fire our own rules (a high-entropy candidate, a key block) never needs it. The
    prefilter is built from :data:`TRIGGERS` alone, one entry per kind; the first line
    whose trigger names a library rule loads all of them. That is exact only for the
    release the triggers were checked against (:data:`LIBRARY_VERSION`; tests compare the
    kinds): with any other release installed the library is loaded at once, as before, so
    a plugin without a trigger of ours still runs on its own pattern.
    """

    def __init__(self, engine: str | None = None, *, lazy: bool | None = None) -> None:
        self._lock = threading.Lock()
        #: Findings of short candidate lines seen before, by (line, rules' indices).
        self._seen: dict[tuple[bytes, frozenset[int]], tuple[Finding, ...]] = {}
        self._library: tuple[_Rule, ...] | None = None
        self._untriggered: list[str] = []
        #: Rules by kind; the library's kinds appear when it is loaded.
        self._by_kind: dict[str, list[_Rule]] = {
            "private-key": [_Rule("private-key", TRIGGERS["private-key"], _no_spans)],
            "high-entropy": [_Rule("high-entropy", TRIGGERS["high-entropy"], entropy_spans)]}
        #: The prefilter set's entries: the kind each one triggers.
        self._kinds = list(TRIGGERS)
        triggers = [TRIGGERS[k] for k in self._kinds]
        if not (lazy if lazy is not None else library_version() == LIBRARY_VERSION):
            for rule in self._load_library():
                if rule.kind not in TRIGGERS or rule.trigger != TRIGGERS[rule.kind]:
                    self._kinds.append(rule.kind)
                    triggers.append(rule.trigger)
        patterns = [(t, PREFILTERS.get(k, t)) for k, t in zip(self._kinds, triggers, strict=True)]
        #: RE2: one line's rule set and a long line's windows; the chunk pass is
        #: :attr:`engine`'s (Hyperscan when installed, else this one).
        self.re2 = Re2Engine(patterns)
        self.engine: TriggerEngine = self.re2
        self._patterns = patterns
        #: The default engine builds Hyperscan's pass on demand (:meth:`want_fast`).
        self._fast_pending = engine is None
        if engine == "hyperscan":
            self.engine = make_engine(patterns, "hyperscan")

    # -- rules ---------------------------------------------------------------------------

    @property
    def rules(self) -> tuple[_Rule, ...]:
        """Every rule, in a fixed order (loads the library's)."""
        library = self._load_library()
        return (self._by_kind["private-key"][0], *library, self._by_kind["high-entropy"][0])

    @property
    def untriggered(self) -> list[str]:
        """Rules that had no trigger of their own (a plugin added by a detect-secrets upgrade):
        they run on the RE2-compatible form of the library's pattern, which is correct but
        may slow the prefilter down; tests list them so a trigger gets written."""
        self._load_library()
        return self._untriggered

    def _load_library(self) -> tuple[_Rule, ...]:
        """detect-secrets' rules and our keyword rule on its word list (once, thread-safe)."""
        with self._lock:
            if self._library is None:
                self._library = self._library_rules()
                for rule in self._library:
                    self._by_kind.setdefault(rule.kind, []).append(rule)
            return self._library

    def _library_rules(self) -> tuple[_Rule, ...]:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins.base import RegexBasedDetector
        from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP

        rules: list[_Rule] = []
        mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
        for secret_type, cls in sorted(mapping.items()):
            if secret_type in _SKIPPED or not issubclass(cls, RegexBasedDetector):
                continue
            plugin: Any = cls()
            kind = _kind(secret_type)
            for n, regex in enumerate(plugin.denylist):
                name = "aws-secret" if kind == "aws-key" and n == 1 else kind
                rules.append(_Rule(name, self._trigger(name, regex),
                                   self._library_rule(plugin, regex, url=kind == "url-password")))
        rules.append(_Rule("password", TRIGGERS["password"],
                           self._keyword_rule(CONFIG_DENYLIST_REGEX_TO_GROUP)))
        return tuple(rules)

    def _trigger(self, kind: str, regex: re.Pattern[str]) -> str:
        if kind in TRIGGERS:
            return TRIGGERS[kind]
        self._untriggered.append(kind)
        trigger = _re2_compatible(regex.pattern)
        return f"(?i:{trigger})" if regex.flags & re.IGNORECASE else trigger

    def _rules_of(self, kinds: Iterable[str]) -> list[_Rule]:
        """The rules of ``kinds``; the library's are loaded when one of them needs it."""
        wanted = set(kinds)
        if not wanted <= self._by_kind.keys():
            self._load_library()
        return [rule for kind in sorted(wanted) for rule in self._by_kind.get(kind, ())]

    @staticmethod
    def _library_rule(plugin: Any, regex: re.Pattern[str],
                      url: bool = False) -> Callable[[str], list[tuple[int, int]]]:
        def find(line: str) -> list[tuple[int, int]]:
            out = []
            for match in regex.finditer(line):
                # The plugin's own checks (a JWT must decode, …) decide on the match.
                if not any(True for _ in plugin.analyze_string(match.group(0))):
                    continue
                s, e = _value_span(match)
                if not plain_value(line[s:e]) and not (url and dummy_url(match.group(0))):
                    out.append((s, e))
            return out

        return find

    @staticmethod
    def _keyword_rule(regexes: dict[re.Pattern[str], int]) -> Callable[[str], list[tuple[int, int]]]:
        def find(line: str) -> list[tuple[int, int]]:
            out = []
            for regex, group in regexes.items():
                for match in regex.finditer(line):
                    s, e = match.span(group)
                    value = line[s:e].strip()
                    quoted = s > 0 and line[s - 1] in "'\"`"
                    if (s < 0 or plain_value(value) or (" " in value and not quoted)
                            or code_value(value, quoted)):
                        continue
                    out.append((s, e))
            return out

        return find

    # -- scanning ------------------------------------------------------------------------

    def next_candidate(self, data: bytes, pos: int = 0, end: int | None = None) -> int:
        """Where the next trigger match starts in ``data[pos:end]``; -1 if none."""
        return self.re2.next_candidate(data, pos, len(data) if end is None else end)

    def candidates(self, data: bytes, pos: int = 0, end: int | None = None) -> list[Candidate]:
        """The candidate lines of ``data[pos:end]`` and the rules to run on each (one pass)."""
        stop = len(data) if end is None else end
        if stop - pos >= FAST_FROM_BYTES:
            self.want_fast()
        return self.engine.candidates(data, pos, stop)

    def want_fast(self) -> None:
        """Build the Hyperscan pass in the background, once (default engine only).

        Why in the background, and only for large texts: compiling the database takes
        ~0.2-0.7 s (the GIL released), far more than the RE2 pass costs on the small texts
        a hook, ``s3spill run`` or a page read masks in a fresh process; for a stream of
        hundreds of MiB (``at_rest``) it pays for itself. Until it is ready, RE2 serves
        (the same candidate lines).
        """
        with self._lock:
            if not self._fast_pending:
                return
            self._fast_pending = False
        threading.Thread(target=self._build_fast, name="s3spill-hyperscan", daemon=True).start()

    def _build_fast(self) -> None:
        try:
            self.engine = make_engine(self._patterns, "hyperscan")
        except Exception:  # noqa: BLE001 - not installed or a pattern it rejects: RE2 stays
            return

    def scan_line(self, line: bytes, *, every_rule: bool = False,
                  hits: Iterable[int] | None = None) -> list[Finding]:
        """Secrets in one line (no newline), as byte spans, overlaps merged.

        Only the rules whose trigger the line matches run (``hits``: the trigger pass said
        which already); ``every_rule`` runs them all (what the tests compare the
        prefilter against).
        """
        if every_rule:
            return self._scan(line, self.rules)
        hits = self.re2.hits(line) if hits is None else frozenset(hits)
        if not hits:
            return []
        if len(line) > _CACHED_LINE:
            return self._scan(line, self._rules_of(self._kinds[i] for i in hits))
        # A log repeats its lines (an env dump per step, the same warning, progress), and
        # a line's findings depend on its bytes and rules alone: seen again, they cost a
        # lookup instead of the rules' Python regexes (~20-60 us per line).
        key = (line, hits)
        found = self._seen.get(key)
        if found is None:
            found = tuple(self._scan(line, self._rules_of(self._kinds[i] for i in hits)))
            if len(self._seen) >= _CACHED_LINES:
                self._seen.clear()  # bounded; clearing now and then is cheaper than an LRU
            self._seen[key] = found
        return list(found)

    def _scan(self, line: bytes, rules: Iterable[_Rule]) -> list[Finding]:
        text = line.decode("utf-8", "surrogateescape")
        ascii_only = line.isascii()
        spans: list[tuple[int, int, str]] = []
        for rule in rules:
            for s, e in rule.find(text):
                if e <= s:
                    continue
                if not ascii_only:  # character offsets of the rule -> byte offsets of the line
                    s, e = (len(text[:s].encode("utf-8", "surrogateescape")),
                            len(text[:e].encode("utf-8", "surrogateescape")))
                spans.append((s, e, rule.kind))
        return _merge(spans)


#: Kinds that name no service: a service's own detector names an overlapping span better.
_GENERIC = frozenset({"password", "high-entropy"})


def _merge(spans: list[tuple[int, int, str]]) -> list[Finding]:
    out: list[Finding] = []
    for s, e, kind in sorted(spans, key=lambda t: (t[0], t[2] in _GENERIC, t[2])):
        if out and s < out[-1].end:
            last = out[-1]
            name = kind if last.kind in _GENERIC and kind not in _GENERIC else last.kind
            out[-1] = Finding(name, last.start, max(last.end, e))
        else:
            out.append(Finding(kind, s, e))
    return out


#: Lines up to this long have their findings remembered (:meth:`SecretDetector.scan_line`),
#: this many at most.
_CACHED_LINE = 512
_CACHED_LINES = 4096

#: A text this large starts the Hyperscan pass's build (:meth:`SecretDetector.want_fast`).
FAST_FROM_BYTES = 1 << 20

_DETECTOR: SecretDetector | None = None
_DETECTOR_LOCK = threading.Lock()


def default_detector() -> SecretDetector:
    """The process-wide detector (built on first use: importing detect-secrets takes ~0.1 s)."""
    global _DETECTOR
    with _DETECTOR_LOCK:
        if _DETECTOR is None:
            _DETECTOR = SecretDetector()
        return _DETECTOR
