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

Masking keeps byte lengths: a secret becomes ``[redacted:aws-key]****`` padded (or
shortened, for short secrets) to its own length. So sizes, line numbers, byte and
character offsets and omitted counts stay exact whether the text is masked or not, and a
masked preview never exceeds a budget its unmasked text fitted. A private key block is
masked line by line from its BEGIN line to its END line (newlines kept). Pure: no I/O.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Redacted",
    "SecretDetector",
    "StreamRedactor",
    "default_detector",
    "describe_counts",
    "redact_bytes",
    "redact_text",
]

#: Lines longer than this are scanned in pieces (a piece overlaps the next by
#: :data:`_OVERLAP` bytes, so a secret shorter than that is never cut).
MAX_LINE_BYTES = 1024 * 1024
_OVERLAP = 8 * 1024
#: Lines longer than this are scanned in windows around each candidate.
_WINDOW = 8 * 1024
#: A key block without END is masked for at most this many lines.
MAX_KEY_BLOCK_LINES = 512
_FILL = "*"

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

_B64 = "A-Za-z0-9+/=_-"
_BEGIN = re.compile(rb"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d")
_END = re.compile(rb"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|Private-MAC: *[0-9a-fA-F]+")
#: ``NAME = value`` / ``"name": "value"`` with a long value from the base64 alphabet.
_ASSIGNMENT = re.compile(
    rf"(?P<name>[A-Za-z_][A-Za-z0-9_.-]{{2,64}})[\"']?[ \t]*[:=][ \t]*[\"'`]?(?P<value>[{_B64}]{{20,}})")
#: Digests are high-entropy and public: ``sha512-…`` (npm integrity), ``h1:…`` (go.sum).
_DIGEST_VALUE = re.compile(r"^(?:sha(?:1|224|256|384|512)[-:_]|md5[-:]|h1:)", re.IGNORECASE)

#: The trigger of each rule: a cheap RE2 pattern that every line the rule can flag
#: matches (a superset: literal anchors and short counted runs, so the combined DFA stays
#: small and one pass runs at memory-like speed). tests/test_context_secrets.py checks
#: that each rule finds nothing its trigger would skip.
TRIGGERS: dict[str, str] = {
    "private-key": r"PRIVATE KEY|PuTTY-User-Key-File|Private-MAC",
    "aws-key": r"A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA",
    "aws-secret": r"(?i:aws)",
    "artifactory-credentials": r"AKC[a-zA-Z0-9]{10}|AP[0-9A-F][a-zA-Z0-9]{8}",
    "azure-key": r"AccountKey=",
    "url-password": r"://[^\s/@]+:[^\s/@]+@",
    "cloudant-credentials": r"(?i:cl(?:ou|oudant)?[_-]?(?:api)?[_-]?(?:key|pwd|pw|pass|token)|cloudant)",
    "discord-bot-token": r"\.[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{8}",
    "github-token": r"gh[pousr]_",
    "gitlab-token": r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-|GR1348941",
    "ibm-cos-hmac-credentials": r"(?i:secret[_-]?(?:access)?[_-]?key)",
    "ibm-cloud-iam-key": r"(?i:key|pwd|pass|token)[^\n]{0,12}[a-zA-Z0-9_-]{44}",
    "jwt": r"eyJ[A-Za-z0-9_=-]+\.",
    "mailchimp-access-key": r"-us[0-9]",
    "npm-token": r"_authToken",
    "openai-token": r"T3BlbkFJ",
    "pypi-token": r"pypi-AgE",
    "sendgrid-api-key": r"SG\.",
    "slack-token": r"(?i:xox[abposr]-|hooks\.slack\.com)",
    "softlayer-credentials": r"(?i:softlayer|sl[_-]?(?:api)?[_-]?(?:key|pwd|pass|token))",
    "square-secret": r"sq0csp-",
    "stripe-access-key": r"k_live_",
    "telegram-bot-token": r"[0-9]{8}:[0-9A-Za-z_-]{8}",
    "twilio-api-key": r"(?:AC|SK)[a-z0-9]{12}",
    # Every word of the library's keyword list holds one of these, and each of its
    # patterns puts an assignment or a comparison right after the name (or before it).
    "password": r"(?i:key|pass|pwd|secret|contrase)[A-Za-z0-9_]*[\]'\"]{0,2}[ \t]*[:=!]"
                r"|(?i:key|pass|pwd|secret|contrase)[^\s]{0,50}[ \t]*[\"'`][^\n]*[\"'`];"
                r"|[=!]=[ \t]*[A-Za-z0-9_]*(?i:key|pass|pwd|secret|contrase)",
    # A name of three or more characters, and a value holding a letter past ``f`` or a
    # base64 symbol: the hex commit ids, UUIDs and digests of a build log (and go.sum's
    # ``h1:``, npm's ``sha512-``) are no candidates; hex carries at most 4 bits of
    # entropy per character, under the limit anyway.
    "high-entropy": r"[A-Za-z_][A-Za-z0-9_.-]{2}[\"']?[ \t]*[:=][ \t]*[\"'`]?[0-9a-fA-F_=-]*"
                    r"(?:[g-rt-zG-Z+/]|s[A-Za-gi-z0-9+/=_-]|sh[A-Zb-z0-9+/=_-]|sha[A-Za-z+/=_-])"
                    r"[A-Za-z0-9+/=_-]{12}",
}
_ENTROPY_LIMIT = 4.5
#: A keyword value that is a word, a path or a placeholder says nothing secret.
_NOT_SECRET = re.compile(
    r"^(?:true|false|null|none|nil|yes|no|required|optional|redacted|hidden|changeme|"
    r"\**|x+|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|%\(?\w+\)?s?)$", re.IGNORECASE)
#: A line that is nothing but PEM body (base64, 48-76 characters): in a text that may
#: start inside a key block (a tail, a page, search results quoting single lines), such
#: a line is masked even without its BEGIN line in sight.
_PEM_BODY = re.compile(rb"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{48,76}={0,2}(?=\r?$)", re.MULTILINE)
#: A token that a cut (the end of a head, the start of a tail or page) may have split.
_BOUNDARY_TOKEN = re.compile(rf"[{_B64}]{{12,}}")


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


def _kind(secret_type: str) -> str:
    return _KIND_NAMES.get(secret_type) or re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def _re2_compatible(pattern: str) -> str:
    """The pattern without what RE2 lacks; dropping look-arounds only widens it."""
    pattern = pattern.replace(r"(?:(?<=\W)|(?<=^))", "")
    pattern = re.sub(r"\(\?!(?:\\w|\[[^\]()]*\])\)", "", pattern)
    return re.sub(r"\{(\d+),\d{4,}\}", r"{\1,}", pattern)


def marker(kind: str, length: int) -> str:
    """An ASCII mask of exactly ``length`` characters naming ``kind`` when it fits."""
    for label in (f"[redacted:{kind}]", f"[{kind}]", "[redacted]"):
        if len(label) <= length:
            return label + _FILL * (length - len(label))
    return _FILL * length


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    """The secret inside a library pattern's match: its last group of six or more
    characters (the key after ``aws_secret_access_key=``), else the whole match."""
    for g in range(match.re.groups, 0, -1):
        s, e = match.span(g)
        if s >= 0 and e - s >= 6:
            return s, e
    return match.span()


def shannon_entropy(value: str) -> float:
    """Bits per character, as detect-secrets' ``Base64HighEntropyString`` measures them for a
    value within its alphabet; counted in one pass (its per-alphabet-letter loop is 15x
    slower, and this runs on every assignment a build log prints)."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def _plain_value(value: str) -> bool:
    return bool(_NOT_SECRET.match(value)) or value.startswith(("/", "~", "./", "../")) \
        or not any(c.isalnum() for c in value)


class SecretDetector:
    """The rules, their triggers and the RE2 prefilter; thread-safe once built."""

    def __init__(self) -> None:
        import re2
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins.base import RegexBasedDetector
        from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP

        self.untriggered = []
        rules: list[_Rule] = [_Rule("private-key", TRIGGERS["private-key"], lambda line: ())]
        mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
        for secret_type, cls in sorted(mapping.items()):
            if secret_type in _SKIPPED or not issubclass(cls, RegexBasedDetector):
                continue
            plugin: Any = cls()
            kind = _kind(secret_type)
            for n, regex in enumerate(plugin.denylist):
                name = "aws-secret" if kind == "aws-key" and n == 1 else kind
                rules.append(_Rule(name, self._trigger(name, regex), self._library_rule(plugin, regex)))
        rules.append(_Rule("password", TRIGGERS["password"],
                           self._keyword_rule(CONFIG_DENYLIST_REGEX_TO_GROUP)))
        rules.append(_Rule("high-entropy", TRIGGERS["high-entropy"], self._entropy_rule))
        self.rules = tuple(rules)
        opts = re2.Options()
        opts.max_mem = 64 << 20
        opts.never_capture = True  # bounds only: submatches would cost an NFA run per match
        self._any = re2.compile("|".join(f"(?:{r.trigger})" for r in rules).encode(), opts)
        # The binding's ``search`` wraps each call in a generator and a match object, which
        # costs three times the search itself on a candidate-rich log; its compiled regexp
        # answers spans directly (used when this version of google-re2 exposes it).
        raw, anchor = getattr(self._any, "_regexp", None), getattr(re2, "_Anchor", None)
        self._spans: Callable[[bytes, int, int], Any] | None = (
            functools.partial(raw.Match, anchor.UNANCHORED) if raw is not None and anchor is not None
            else None)
        self._set = re2.Set.SearchSet(opts)
        for rule in rules:
            self._set.Add(rule.trigger.encode())
        self._set.Compile()

    # -- rules ---------------------------------------------------------------------------

    #: Rules that had no trigger of their own (a plugin added by a detect-secrets upgrade):
    #: they run on the RE2-compatible form of the library's pattern, which is correct but
    #: may slow the prefilter down; tests list them so a trigger gets written.
    untriggered: list[str]

    def _trigger(self, kind: str, regex: re.Pattern[str]) -> str:
        if kind in TRIGGERS:
            return TRIGGERS[kind]
        self.untriggered.append(kind)
        trigger = _re2_compatible(regex.pattern)
        return f"(?i:{trigger})" if regex.flags & re.IGNORECASE else trigger

    @staticmethod
    def _library_rule(plugin: Any, regex: re.Pattern[str]) -> Callable[[str], list[tuple[int, int]]]:
        def find(line: str) -> list[tuple[int, int]]:
            out = []
            for match in regex.finditer(line):
                # The plugin's own checks (a JWT must decode, …) decide on the match.
                if not any(True for _ in plugin.analyze_string(match.group(0))):
                    continue
                s, e = _value_span(match)
                if not _plain_value(line[s:e]):
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
                    if s < 0 or _plain_value(value) or (" " in value and not quoted):
                        continue
                    out.append((s, e))
            return out

        return find

    def _entropy_rule(self, line: str) -> list[tuple[int, int]]:
        out = []
        for match in _ASSIGNMENT.finditer(line):
            value = match.group("value")
            if _DIGEST_VALUE.match(value) or _DIGEST_VALUE.match(line[match.start("value"):][:8]):
                continue
            if shannon_entropy(value) > _ENTROPY_LIMIT:
                out.append(match.span("value"))
        return out

    # -- scanning ------------------------------------------------------------------------

    def next_candidate(self, data: bytes, pos: int = 0, end: int | None = None) -> int:
        """Where the next trigger match starts in ``data[pos:end]``; -1 if none."""
        stop = len(data) if end is None else end
        if self._spans is not None:
            return int(self._spans(data, pos, stop)[0][0])
        m = self._any.search(data, pos, stop)
        return -1 if m is None else int(m.start())

    def scan_line(self, line: bytes, *, every_rule: bool = False) -> list[Finding]:
        """Secrets in one line (no newline), as byte spans, overlaps merged.

        Only the rules whose trigger the line matches run; ``every_rule`` runs them all
        (what the tests compare the prefilter against).
        """
        hits = range(len(self.rules)) if every_rule else self._set.Match(line)
        if not hits:
            return []
        text = line.decode("utf-8", "surrogateescape")
        ascii_only = line.isascii()
        spans: list[tuple[int, int, str]] = []
        for index in sorted(hits):
            rule = self.rules[index]
            for s, e in rule.find(text):
                if e <= s:
                    continue
                if not ascii_only:
                    s = len(text[:s].encode("utf-8", "surrogateescape"))
                    e = s + len(text[s:e].encode("utf-8", "surrogateescape"))
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


_DETECTOR: SecretDetector | None = None
_DETECTOR_LOCK = threading.Lock()


def default_detector() -> SecretDetector:
    """The process-wide detector (built on first use: importing detect-secrets takes ~0.1 s)."""
    global _DETECTOR
    with _DETECTOR_LOCK:
        if _DETECTOR is None:
            _DETECTOR = SecretDetector()
        return _DETECTOR


# --------------------------------------------------------------------------- masking


@dataclass
class _LineMasker:
    """Masks complete lines in place, carrying the private-key state from line to line."""

    detector: SecretDetector
    counts: Counter[str] = field(default_factory=Counter)
    in_key: bool = False
    key_lines: int = 0

    def _mask(self, buf: bytearray, start: int, end: int, kind: str) -> None:
        if end > start:
            buf[start:end] = marker(kind, end - start).encode()

    def process(self, data: bytes, *, headless: bool = False) -> bytes:
        """``data`` (complete lines, or a piece of one long line) with its secrets masked.

        ``headless``: the text may start inside a key block (a tail, a page): an END line
        before any BEGIN masks everything before it.
        """
        buf: bytearray | None = None
        pos, size = 0, len(data)
        seen: set[int] = set()
        if headless and not self.in_key:
            end = _END.search(data)
            begin = _BEGIN.search(data, 0, end.start()) if end is not None else None
            if end is not None and begin is None:
                buf = bytearray(data)
                self._mask_lines(buf, 0, end.end(), kind="private-key")
                self.counts["private-key"] += 1
                pos = end.end()
        while pos < size:
            if self.in_key:
                nl = data.find(b"\n", pos)
                line_end = size if nl < 0 else nl
                buf = buf if buf is not None else bytearray(data)
                stop = _END.search(data, pos, line_end)
                cut = stop.end() if stop is not None else line_end
                self._mask(buf, pos, cut - (1 if data[pos:cut].endswith(b"\r") else 0), "private-key")
                self.key_lines += 1
                if stop is not None or self.key_lines >= MAX_KEY_BLOCK_LINES:
                    self.in_key = False
                pos = (line_end + 1) if stop is None else cut
                continue
            at = self.detector.next_candidate(data, pos, size)
            if at < 0:
                break
            line_start = max(pos, data.rfind(b"\n", 0, at) + 1)
            nl = data.find(b"\n", at)
            line_end = size if nl < 0 else nl
            # A long line (minified JSON, a progress bar) is scanned in windows around its
            # candidates: the rules' Python regexes cost more than linear time on a long
            # line, and a secret sits next to what triggered it.
            start, until, after = line_start, line_end, line_end + 1
            if line_end - line_start > _WINDOW:
                start = max(line_start, at - _WINDOW // 4)
                until = min(line_end, at + _WINDOW)
                after = line_end + 1 if until == line_end else max(at + 1, until - _WINDOW // 4)
            line = data[start:until]
            begin = _BEGIN.search(line)
            scan_to = begin.start() if begin is not None else len(line)
            findings = self.detector.scan_line(line[:scan_to]) if scan_to else []
            if findings or begin is not None:
                buf = buf if buf is not None else bytearray(data)
            for f in findings:
                assert buf is not None
                self._mask(buf, start + f.start, start + f.end, f.kind)
                if start + f.start not in seen:  # windows overlap: count each secret once
                    seen.add(start + f.start)
                    self.counts[f.kind] += 1
            if begin is not None:
                self.counts["private-key"] += 1
                self.in_key, self.key_lines = True, 0
                pos = start + begin.start()
                continue  # the key state masks from BEGIN on (to END, maybe on this line)
            pos = after
        return bytes(buf) if buf is not None else data

    def _mask_lines(self, buf: bytearray, start: int, end: int, *, kind: str) -> None:
        """Mask ``buf[start:end]`` line by line, keeping newlines (and CRs)."""
        pos = start
        while pos < end:
            nl = buf.find(b"\n", pos, end)
            stop = end if nl < 0 else nl
            self._mask(buf, pos, stop - (1 if buf[pos:stop].endswith(b"\r") else 0), kind)
            pos = stop + 1


@dataclass(frozen=True)
class Redacted:
    """A masked text (same length in bytes as the original) and what was masked."""

    data: bytes
    counts: Counter[str]

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    @property
    def found(self) -> int:
        return sum(self.counts.values())


def redact_bytes(data: bytes, *, headless: bool = False, cut_start: bool = False, cut_end: bool = False,
                 detector: SecretDetector | None = None) -> Redacted:
    """Mask the secrets of a whole text in memory (a preview, a page, a grep result).

    ``headless``: the text may start inside a key block (see :data:`_PEM_BODY`).
    ``cut_start`` / ``cut_end``: the text was cut out of a longer one there, so a long
    token touching that edge may be part of a secret the detectors no longer recognise;
    it is masked as ``partial``.
    """
    masker = _LineMasker(detector or default_detector())
    out = masker.process(data, headless=headless)
    if headless and _PEM_BODY.search(out):
        buf = bytearray(out)
        for m in _PEM_BODY.finditer(out):
            buf[m.start():m.end()] = marker("key-material", m.end() - m.start()).encode()
            masker.counts["key-material"] += 1
        out = bytes(buf)
    if cut_start or cut_end:
        buf = bytearray(out)
        for edge, wanted in ((0, cut_start), (len(buf), cut_end)):
            if not wanted:
                continue
            region = bytes(buf[:256]) if edge == 0 else bytes(buf[-256:])
            offset = 0 if edge == 0 else len(buf) - len(region)
            for m in re.finditer(_BOUNDARY_TOKEN.pattern.encode(), region):
                touches = m.start() == 0 if edge == 0 else m.end() == len(region)
                if touches and not region[m.start():m.end()].startswith(b"[redacted"):
                    buf[offset + m.start():offset + m.end()] = marker("partial", m.end() - m.start()).encode()
                    masker.counts["partial"] += 1
        out = bytes(buf)
    return Redacted(out, masker.counts)


def redact_text(text: str, **kwargs: Any) -> tuple[str, Counter[str]]:
    """:func:`redact_bytes` for a ``str`` (lone surrogates round-trip)."""
    raw = text.encode("utf-8", "surrogateescape")
    done = redact_bytes(raw, **kwargs)
    if not done.counts:
        return text, done.counts
    return done.data.decode("utf-8", "surrogateescape"), done.counts


class StreamRedactor:
    """Mask a byte stream chunk by chunk, in bounded memory; output length = input length.

    Holds back the last partial line (up to :data:`MAX_LINE_BYTES`; a longer line is
    scanned in overlapping pieces), so a secret is always seen whole.
    """

    def __init__(self, detector: SecretDetector | None = None, max_line: int = MAX_LINE_BYTES) -> None:
        self._masker = _LineMasker(detector or default_detector())
        self._carry = b""
        self._max_line = max(max_line, 2 * _OVERLAP)

    @property
    def counts(self) -> Counter[str]:
        return self._masker.counts

    def push(self, chunk: bytes) -> bytes:
        """The masked bytes that are final now (maybe fewer than pushed; never more in total)."""
        data = self._carry + chunk if self._carry else chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) <= self._max_line:
            self._carry = data
            return b""
        if cut == 0:
            masked = self._masker.process(data)  # scan all of it, emit all but the overlap
            cut = len(data) - _OVERLAP
            self._carry = masked[cut:]
            return masked[:cut]
        self._carry = data[cut:]
        return self._masker.process(data[:cut] if cut < len(data) else data)

    def finish(self) -> bytes:
        """The rest (the last line, masked)."""
        rest, self._carry = self._carry, b""
        return self._masker.process(rest) if rest else b""


def describe_counts(counts: Counter[str]) -> str:
    """``2 aws-key, 1 private-key`` (sorted by kind)."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
