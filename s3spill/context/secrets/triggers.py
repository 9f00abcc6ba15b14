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
from collections.abc import Callable

__all__ = ["BASE64_ALPHABET", "PREFILTERS", "TRIGGERS", "may_hold_secret", "prefilter"]

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

_B64 = r"[A-Za-z0-9+/=_-]"
_HEXISH = r"[0-9a-fA-F_=-]"
#: The high-entropy trigger, looser (and 3x cheaper for Hyperscan and RE2: shorter counted
#: runs, no length bound), for the pass over every byte; a line it finds runs the rule
#: only if the exact trigger matches the line too.
_ENTROPY_PREFILTER = (rf"[A-Za-z0-9_.-]{{3}}[\"']?[ \t]*[:=][ \t]*[\"'`]?"
                      rf"(?:(?:[g-rt-zG-Z+/]|s[A-Za-gi-z0-9+/=_-]|sh[A-Zb-z0-9+/=_-]|sha[A-Za-z+/=_-])"
                      rf"{_B64}{{12}}|{_HEXISH}{{1,7}}[g-zG-Z+/]{_B64}{{12}}|{_HEXISH}{{8,}}[g-zG-Z+/])")


def _high_entropy() -> str:
    """The high-entropy rule's trigger (``_ASSIGNMENT`` of :mod:`.detector`, checked by entropy).

    A name of three or more characters (the last three count: ``config.v2=`` is a name),
    an assignment, and a value holding a letter past ``f`` or a base64 symbol: the hex
    commit ids, UUIDs and digests of a build log (and go.sum's ``h1:``, npm's ``sha512-``)
    are no candidates; hex carries at most 4 bits of entropy per character, under the
    limit anyway. And a length: entropy is at most log2 of the distinct characters, so a
    value passes the plain 4.5-bit limit only with 23 or more of them (2**4.5 = 22.6); the
    3.8-bit limit (14 characters, fewer than the rule's 20) applies only after a name that
    says secret. So a shorter value is a candidate only after such a name:
    ``path=/api/v1/items/00000014`` on every line of a request log is none.
    """
    hex_run, b64 = "[0-9a-fA-F_=-]", "[A-Za-z0-9+/=_-]"
    assign = r"[\"']?[ \t]*[:=][ \t]*[\"'`]?"
    # The first character that is no hex digit (``sha`` spelled out as a prefix is not
    # one: the rule skips digests), by its length in characters.
    non_hex = {1: "[g-rt-zG-Z+/]", 2: "s[A-Za-gi-z0-9+/=_-]", 3: "sh[A-Zb-z0-9+/=_-]", 4: "sha[A-Za-z+/=_-]"}
    any_value = f"{hex_run}*(?:{'|'.join(non_hex.values())}){b64}{{12}}"
    # The same value, 23 characters or more in all: p hex characters, the non-hex one(s)
    # of length m, then at least max(12, 23 - p - m) more.
    long_value = []
    for m, first in non_hex.items():
        for p in range(0, 11 - m):
            long_value.append(f"{hex_run}{{{p}}}{first}{b64}{{{23 - p - m}}}")
        long_value.append(f"{hex_run}{{{11 - m},}}{first}{b64}{{12}}")
    secretish = "(?i:token|secret|passw|api_?key|private|credential|auth)"
    return (f"{secretish}[A-Za-z0-9_.-]*{assign}{any_value}"
            f"|[A-Za-z0-9_.-]{{3}}{assign}(?:{'|'.join(long_value)})")


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
    "password": _KEYWORD_TRIGGER,
    "high-entropy": _high_entropy(),
}


#: Looser patterns for the pass over every byte, where the exact trigger costs more
#: there (each matches wherever its trigger does: tests/context/secrets/test_engine.py).
PREFILTERS: dict[str, str] = {"high-entropy": _ENTROPY_PREFILTER,
                               # The keyword alone: a literal set, where the comparison
                               # form (``==`` then a name) costs a scan of the rest of every
                               # ``pkg==1.2`` line.
                               "password": _KEYWORDS}


def prefilter(kind: str) -> str:
    """The pattern the chunk pass looks for, for rule ``kind``."""
    return PREFILTERS.get(kind) or TRIGGERS[kind]


@functools.cache
def _union(exact: bool) -> Callable[[bytes], object]:
    import re2

    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1  # bytes: ``[\x80-\xff]`` is any non-ASCII byte
    opts.never_capture = True
    opts.max_mem = 64 << 20  # the exact union's DFA is larger; short of memory RE2 runs slower
    search: Callable[[bytes], object] = re2.compile(
        "|".join(f"(?:{TRIGGERS[k] if exact else prefilter(k)})" for k in TRIGGERS).encode(), opts).search
    return search


def may_hold_secret(data: bytes) -> bool:
    """Could masking change ``data``? False only when no rule's trigger matches anywhere in it.

    Exact as a "no": every line a rule can flag matches that rule's trigger (the
    detector's own prefilter relies on it, and tests/test_context_secrets.py checks it),
    and the detector has no rule without one (``SecretDetector.untriggered`` is empty).

    Two passes: the loose union (:data:`PREFILTERS`, ~1 ms to compile) answers most texts
    ("no"); a text it matches is asked the exact union (~7 ms to compile), because a "yes"
    builds the detector, whose trigger engine costs far more in a fresh process (~0.7 s
    for Hyperscan's database): a request log's ``path=/api/v1/items/00000014`` on every
    line matches the loose entropy pattern, not the exact trigger.
    """
    return _union(False)(data) is not None and _union(True)(data) is not None
