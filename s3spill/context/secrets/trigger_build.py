"""How each secret rule's trigger, prefilter and sieve patterns are built: the source of
:mod:`.trigger_patterns`, which holds them written out.

Why two modules: a page read or a small ``run`` is a process of its own (issue 35), and
building these patterns (~60 character classes, the entropy rule's counted alternatives)
cost ~1 ms of each process's import of :mod:`.triggers`. So the patterns are generated
once, as literals, into :mod:`.trigger_patterns`; ``python -m
s3spill.context.secrets.trigger_build`` writes it again after a change here, and
tests/context/secrets/test_trigger_patterns.py fails while the two differ (values and text).
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["BASE64_ALPHABET", "PREFILTERS", "PREFILTER_PARTS", "SIEVES", "TRIGGERS", "source"]

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



_GENERATED = Path(__file__).with_name("trigger_patterns.py")
#: Longest piece of a string literal in the generated module (its lines stay within the lint's width).
_PIECE = 88


def _quoted(text: str) -> str:
    """``text`` as a double-quoted Python literal (a JSON string is one, ASCII only)."""
    return json.dumps(text)


def _literal(text: str, indent: str) -> str:
    """``text`` as Python source: one literal, or a parenthesized run of pieces when long."""
    if len(_quoted(text)) <= _PIECE:
        return _quoted(text)
    pieces = [_quoted(text[i:i + _PIECE - 12]) for i in range(0, len(text), _PIECE - 12)]
    return "(" + f"\n{indent} ".join(pieces) + ")"


def source() -> str:
    """The text of :mod:`.trigger_patterns` for the patterns built here."""
    out = ['"""The secret rules\' patterns, written out by :mod:`.trigger_build` (generated: do not edit).',
           "",
           "``python -m s3spill.context.secrets.trigger_build`` writes this file again;",
           "tests/context/secrets/test_trigger_patterns.py checks that it holds what the builder builds.",
           "What each pattern is and why: :mod:`.trigger_build`.",
           '"""', "", "from __future__ import annotations", "",
           '__all__ = ["BASE64_ALPHABET", "PREFILTERS", "PREFILTER_PARTS", "SIEVES", "TRIGGERS"]', "",
           f"BASE64_ALPHABET = {_quoted(BASE64_ALPHABET)}", ""]
    for name, table in (("TRIGGERS", TRIGGERS), ("PREFILTERS", PREFILTERS), ("SIEVES", SIEVES)):
        out.append(f"{name}: dict[str, str] = {{")
        out += [f"    {_quoted(kind)}: {_literal(pattern, '    ')}," for kind, pattern in table.items()]
        out += ["}", ""]
    out.append("PREFILTER_PARTS: dict[str, tuple[str, ...]] = {")
    for kind, parts in PREFILTER_PARTS.items():
        out.append(f"    {_quoted(kind)}: (")
        out += [f"        {_literal(part, '        ')}," for part in parts]
        out.append("    ),")
    out.append("}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    _GENERATED.write_text(source(), encoding="utf-8")
