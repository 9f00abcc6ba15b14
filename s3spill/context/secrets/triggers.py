"""The trigger of every secret rule, and the one question a small output asks of them.

A module of constants and one function, importing nothing of detect-secrets: the
detector (:mod:`.detector`) builds its trigger pass (:mod:`.engine`) and rule set from
:data:`TRIGGERS` and :data:`PREFILTERS`, and :func:`may_hold_secret` asks the same union
whether a text can hold a secret at all.
When it cannot, masking it changes nothing, so ``s3spill run`` of a small output never
builds the detector (~0.2 s).
"""

from __future__ import annotations

import functools
import itertools

from s3spill.context.secrets.anchors import no_anchor

TYPE_CHECKING = False  # not from typing: a page read imports this module (issue 35)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["BASE64_ALPHABET", "PREFILTERS", "PREFILTER_PARTS", "SIEVES", "TRIGGERS", "lines_kept",
           "may_hold_secret", "prefilter", "prefilter_parts", "sieve"]

#: The characters of a base64 (or base64url) token, as a regex class body.
BASE64_ALPHABET = "A-Za-z0-9+/=_-"

#: A byte of a word character as Python's ``\\w`` sees a str (any byte of a multi-byte
#: character counts: the library's keyword patterns run on decoded text).
_W = r"[A-Za-z0-9_\x80-\xff]"
#: A byte of white space as ``\\s`` sees a str (``\\x1c``-``\\x1f``, and again any byte of a
#: multi-byte character, for the Unicode spaces).
_WS = r"[\t-\r\x1c-\x20\x80-\xff]"
#: detect-secrets' keyword list (``DENYLIST``), every spelling.
_KEYWORDS = (r"(?i:(?:api|auth|service|account|db|database|priv|private|client)_?key"
             r"|(?:db|database|key)_?pass|passw(?:or)?d|pwd|secret|contrase)")
#: Its four patterns (``CONFIG_DENYLIST_REGEX_TO_GROUP``): a keyword, an assignment or
#: comparison, and a value that starts with a word character (so ``PWD=/home/runner``,
#: a path, is no candidate); a quoted value and ``;`` after a keyword; ``"value" == name``.
_KEYWORD_TRIGGER = (
    rf"{_KEYWORDS}{_W}*[\]'\"]{{0,2}}(?::|{_WS}*(?:={{1,3}}|!==?)){_WS}*['\"`]?{_W}"
    rf"|{_KEYWORDS}[^\t-\r\x1c-\x20]*{_WS}*['\"`]{_W}[^\n]*['\"`];"
    rf"|[=!][=!]{_WS}*{_W}*{_KEYWORDS}")

_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
_HEX_CHARS = "0123456789abcdefABCDEF_=-"
#: Characters no hex digit is: any letter past ``f`` (either case), ``+``, ``/``.
_PAST_F = frozenset(_B64_CHARS) - frozenset(_HEX_CHARS)
#: The digest prefixes the rule skips (``_DIGEST_VALUE`` of :mod:`.values`), as they can
#: start a value (``:`` ends one, so only ``-`` and ``_`` follow the name inside it).
_DIGESTS = ("sha1-", "sha1_", "sha224-", "sha224_", "sha256-", "sha256_", "sha384-", "sha384_",
            "sha512-", "sha512_", "md5-")


def _cls(chars: Iterable[str]) -> str:
    """A character class of ``chars`` (base64 alphabet), written with ranges."""
    return _class_of(frozenset(chars))


_RUNS = ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789")


@functools.cache
def _class_of(wanted: frozenset[str]) -> str:
    """:func:`_cls`, once per set: the module builds ~60 classes of ~15 sets at import, which a
    fresh process (``s3spill read``, ``run``) pays for before its first masking question."""
    out = []
    for run in _RUNS:  # each run of consecutive wanted characters: one, two, or a range
        for piece in "".join(c if c in wanted else " " for c in run).split():
            out.append(piece if len(piece) <= 2 else f"{piece[0]}-{piece[-1]}")
    out += [c for c in "+/=_-" if c in wanted]  # ``-`` last: a literal there
    return out[0] if len(out) == 1 and len(out[0]) == 1 else "[" + "".join(out) + "]"


_B64 = _cls(_B64_CHARS)
_HEXISH = _cls(_HEX_CHARS)
_X = _cls(_PAST_F)
_ASSIGN = r"[\"']?[ \t]*[:=][ \t]*[\"'`]?"
_NAME3 = "[A-Za-z0-9_.-]{3}"
_SECRETISH = "(?i:token|secret|passw|api_?key|private|credential|auth)"


def _digest_free_starts(tail: int | None, shortest: int = 1) -> list[str]:
    """Value starts with ``s``/``m`` (either case) that begin no digest the rule skips,
    each followed by enough characters for a value of ``tail`` characters (None: no
    tail); ``shortest``: only the starts past a digest's first ``shortest - 1`` characters.
    Such a value holds a letter past ``f`` already (``s``, ``m``)."""
    out = []
    for pre, head in _digest_free_heads():
        if len(pre) >= shortest:
            out.append(head if tail is None else f"{head}{_B64}{{{tail - len(pre) - 1}}}")
    return out


@functools.cache
def _digest_free_heads() -> tuple[tuple[str, str], ...]:
    """Each start of a digest the rule skips, and the pattern of that start followed by a
    character that goes on to no digest (built once: three callers at import)."""
    def lit(text: str) -> str:
        return "".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in text)

    out = []
    for pre in sorted({d[:i] for d in _DIGESTS for i in range(1, len(d))}):
        bad = {c for d in _DIGESTS if d.startswith(pre) and len(d) > len(pre)
               for c in (d[len(pre)].lower(), d[len(pre)].upper())}
        out.append((pre, f"{lit(pre)}{_cls(set(_B64_CHARS) - bad)}"))
    return tuple(out)


def _past_f_value(length: int) -> list[str]:
    """A base64-alphabet value of ``length`` characters or more holding a letter past ``f``
    (or ``+``, ``/``) and starting with no digest: the first such character at each
    position ``p`` (hex before it), then at least ``length - 1 - p`` more."""
    first = _cls(_PAST_F - set("sSmM"))  # a value starting with s or m: the digest-free starts
    out = [f"{first}{_B64}{{{length - 1}}}"]
    out += [f"{_HEXISH}{{{p}}}{_X}{_B64}{{{length - 1 - p}}}" for p in range(1, length - 1)]
    return [*out, f"{_HEXISH}{{{length - 1},}}{_X}", *_digest_free_starts(length)]


def _mixed_hex_value() -> list[str]:
    """A value of hex digits and ``_=-`` only that can hold 23 distinct characters: of
    those 25, such a value misses two at most, so it holds a lower-case and an upper-case
    ``a``-``f`` and one of ``_=-`` (0-9 and both cases are 22). By which comes first:
    digits, then the first of one kind, ..., then the first of the third kind."""
    kinds = ("a-f", "A-F", r"=_\-")
    out = []
    for a, b, c in itertools.permutations(kinds):
        out.append(f"[0-9]*[{a}][0-9{a}]*[{b}][0-9{a}{b}]*[{c}]")
    return out


def _high_entropy() -> str:
    """The high-entropy rule's trigger (``_ASSIGNMENT`` of :mod:`.values`, checked by entropy).

    A name of three or more characters (the last three count: ``config.v2=`` is a name),
    an assignment, and a value that can pass: entropy is at most log2 of the distinct
    characters, so a value passes the plain 4.5-bit limit only with 23 or more of them
    (2**4.5 = 22.6), and hex digits with ``_=-`` are 19 in one case: such a value holds a
    letter past ``f`` (or ``+``, ``/``) or hex letters of both cases. A digest the rule
    skips (``sha512-``, ``md5-``) is no candidate, so npm's integrity lines are none; the
    3.8-bit limit (14 characters, 20 long) applies only after a name that says secret
    and to a value with a letter past ``f``. So ``path=/api/v1/items/00000014`` and the
    hex commit ids, UUIDs and digests of a build log are no candidates.
    """
    plain = "|".join([*_past_f_value(23), *_mixed_hex_value()])
    secretish = "|".join(_past_f_value(20))
    return f"{_NAME3}{_ASSIGN}(?:{plain})|{_SECRETISH}[A-Za-z0-9_.-]*{_ASSIGN}(?:{secretish})"


def _entropy_prefilter() -> tuple[str, ...]:
    """The high-entropy trigger, looser and several times cheaper for Hyperscan, in two
    expressions (one union of them costs Hyperscan more than their sum), for the pass over
    every byte; a line they find runs the rule only if the exact trigger matches the line
    too. A first letter past ``f`` at ``p`` leaves 19 - p more characters at least (20
    after a secret-sounding name): 12 or more when ``p`` < 8; ``sha`` and a digit begins
    no digest the rule skips unless the digits name one. The hex values of both cases are
    rare: they follow the assignment itself (no name: cheaper to find).

    Before the ``:`` or ``=``: a name of three characters right before it, or a quote, a
    space or a tab (what the trigger allows between the name and the assignment: after
    ``name"  =``, the byte before ``=`` is one of them). Looser than the trigger's name,
    optional quote and spaces, and a third cheaper for Hyperscan, which otherwise follows
    the optional runs from every name-like byte (1.6 against 2.3 ms per MiB of the bench's
    build log, the same 305 matches per MiB)."""
    first = _cls(_PAST_F - set("s"))
    after_sha = "|".join(s[len("[Ss][Hh][Aa]"):] for s in _digest_free_starts(None, shortest=3)
                         if s.startswith("[Ss]"))  # sha, then no digest's next character
    s_forms = f"s{_cls(set(_B64_CHARS) - {'h'})}|sh{_cls(set(_B64_CHARS) - {'a'})}|sha(?:{after_sha})"
    past_f = f"(?:{first}|{s_forms}){_B64}{{12}}|{_HEXISH}{{1,7}}{_X}{_B64}{{12}}|{_HEXISH}{{8,}}{_X}"
    after = r"[:=][ \t]*[\"'`]?"
    before = rf"(?:{_NAME3}|[\"' \t])"
    return f"{before}{after}(?:{past_f})", f"{after}(?:{'|'.join(_mixed_hex_value())})"


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
    # The keyword, quotes, spaces (any number), an assignment and the 44-character key.
    "ibm-cloud-iam-key": (r"(?i:key|pwd|pass|token)(?i:word)?[\"']?\]? *(?:[=:]|:=|=>|::)? *[\"']?"
                          r"[a-zA-Z0-9_-]{44}"),
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
    "password": _KEYWORD_TRIGGER,
    "high-entropy": _high_entropy(),
}


#: Looser patterns for the pass over every byte, where the exact trigger costs more
#: there (each matches wherever its trigger does: tests/context/secrets/test_engine.py).
#: Prefilters that Hyperscan scans for as separate expressions (cheaper than their union).
PREFILTER_PARTS: dict[str, tuple[str, ...]] = {"high-entropy": _entropy_prefilter()}
PREFILTERS: dict[str, str] = {"high-entropy": "|".join(f"(?:{p})" for p in PREFILTER_PARTS["high-entropy"]),
                               # The keyword alone: a literal set, where the comparison
                               # form (``==`` then a name) costs a scan of the rest of every
                               # ``pkg==1.2`` line.
                               "password": _KEYWORDS}


def _entropy_sieve() -> str:
    """The high-entropy trigger, looser again but tight on length, for :func:`may_hold_secret`.

    Why beside the prefilter: the prefilter is loose on purpose (a letter past ``f`` and 12
    more characters: cheap for Hyperscan over every byte), so a request log's
    ``path=/api/v1/items/00000014`` on every line matches it, and :func:`may_hold_secret`
    then compiled the exact union (~4 ms in a fresh process) to learn that it holds no
    secret. This one keeps what the exact trigger says of the value's length and drops the
    rest: an assignment and 23 characters of the base64 alphabet (20 after a name that
    says secret), or a value of hex digits and ``_=-`` with hex letters of both cases
    (:func:`_mixed_hex_value`: whichever case comes first). Every value the exact trigger
    accepts is such a value (its shortest forms are 23 and 20 characters long, each of the
    alphabet), so it matches wherever the exact trigger does (the tests generate matches
    of it); it is a few counted classes, so it compiles in a fraction of the exact one.
    """
    start = r"[:=][ \t]*[\"'`]?"
    mixed = r"[0-9=_-]*(?:[a-f][0-9a-f=_-]*[A-F]|[A-F][0-9A-F=_-]*[a-f])"
    return (f"{start}(?:{_B64}{{23}}|{mixed})"
            f"|{_SECRETISH}[A-Za-z0-9_.-]*[\"']?[ \t]*{start}{_B64}{{20}}")


#: What :func:`may_hold_secret` asks before the exact union, per rule where it differs
#: from the rule's prefilter: each matches wherever the rule's trigger does (tested).
SIEVES: dict[str, str] = {"high-entropy": _entropy_sieve()}


def sieve(kind: str) -> str:
    """The pattern :func:`may_hold_secret`'s first pass looks for, for rule ``kind``."""
    return SIEVES.get(kind) or prefilter(kind)


def prefilter(kind: str) -> str:
    """The pattern the chunk pass looks for, for rule ``kind``."""
    return PREFILTERS.get(kind) or TRIGGERS[kind]


_PARTS_OF = {PREFILTERS[k]: parts for k, parts in PREFILTER_PARTS.items()}


def prefilter_parts(pattern: str) -> tuple[str, ...]:
    """``pattern`` (a prefilter) as the expressions Hyperscan compiles for it."""
    return _PARTS_OF.get(pattern, (pattern,))


@functools.cache
def _union(exact: bool) -> Callable[[bytes], object]:
    """The union of every rule's trigger (``exact``) or of the prefilters, compiled once."""
    return _compiled("|".join(f"(?:{TRIGGERS[k] if exact else prefilter(k)})" for k in TRIGGERS))


@functools.cache
def _sieve_union() -> Callable[[bytes], object]:
    """The union of the sieves (:func:`sieve`), compiled once."""
    return _compiled("|".join(f"(?:{sieve(k)})" for k in TRIGGERS))


def _compiled(pattern: str) -> Callable[[bytes], object]:
    """``pattern`` as LATIN-1 bytes (``[\x80-\xff]`` is any non-ASCII byte), with RE2's binding
    alone when the package is not loaded yet (:mod:`.re2_light`: a page read's process)."""
    from s3spill.context.secrets.re2_light import searcher

    # max_mem: the exact union's DFA is larger; short of memory RE2 runs slower
    return searcher(pattern.encode(), max_mem=64 << 20)


def may_hold_secret(data: bytes) -> bool:
    """Could masking change ``data``? False only when no rule's trigger matches anywhere in it.

    Exact as a "no": every line a rule can flag matches that rule's trigger (the
    detector's own prefilter relies on it, and tests/test_context_secrets.py checks it),
    and the detector has no rule without one (``SecretDetector.untriggered`` is empty).

    Three passes, each a superset of the exact union, so any "no" is the answer: the
    sieves' union (:func:`sieve`: the prefilters, with the entropy rule's tight on the
    value's length; ~1.5 ms to compile), then the prefilters' (:data:`PREFILTERS`: the
    entropy rule's wants a letter past ``f``, so hex digests pass it; ~1.5 ms), then the
    exact union (~4-10 ms to compile), because a "yes" builds the detector, whose trigger
    engine costs far more in a fresh process (~0.7 s for Hyperscan's database). A request
    log's ``path=/api/v1/items/00000014`` on every line (a 22-character value) matches the
    loose entropy prefilter, not the sieve; ``sha256:<64 hex digits>`` the sieve, not the
    prefilter. A pass that matches stops at its first match, so a text that goes on to
    the next pass costs one compile more, not one scan more.
    """
    if no_anchor(data):  # no trigger's match can be in it (tests/context/secrets/test_anchors.py)
        return False
    return (_sieve_union()(data) is not None and _union(False)(data) is not None
            and _union(True)(data) is not None)


def lines_kept(window: bytes, first: int, end: int) -> bool:
    """Does masking a chunk whose window is ``window`` (:func:`~.masking.mask_view`, given
    the stored text around the chunk) leave ``window[first:end]`` (whole lines) as stored?

    Masking works line by line on the window and keeps every byte's place: a line changes
    only where a rule flags it, and a rule flags a line only where its trigger matches inside
    that line (what the detector's own shortcut relies on) — except in a private key block,
    which spans lines from a BEGIN line to an END line (a window that starts inside one is
    masked up to its END), and every BEGIN and END line holds the key rule's trigger, a few
    literals. So when none of those is anywhere in the window and no trigger matches inside
    the lines, masking leaves them as stored, wherever else in the window a secret is: only
    those lines are searched (a page's ~1/6 of a 1 MiB chunk). False: it may not.
    """
    if any(marker in window for marker in _KEY_MARKERS):
        return False  # a key block may reach into the lines from anywhere in the window
    return not may_hold_secret(window[first:end])


#: The key-block trigger's literals (it is an alternation of them: a test says so).
_KEY_MARKERS = tuple(m.encode() for m in TRIGGERS["private-key"].split("|"))
