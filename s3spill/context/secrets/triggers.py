"""The trigger of every secret rule, and the one question a small output asks of them.

A module of constants and one function, importing nothing of detect-secrets: the
detector (:mod:`.detector`) builds its RE2 prefilter and rule set from :data:`TRIGGERS`,
and :func:`may_hold_secret` asks the same union whether a text can hold a secret at all.
When it cannot, masking it changes nothing, so ``s3spill run`` of a small output never
builds the detector (~0.2 s).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = ["PREFILTERS", "TRIGGERS", "may_hold_secret", "prefilter"]

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


def _entropy_value() -> str:
    """A value the entropy rule can flag: 20 or more base64 characters, one of them past
    ``f`` (hex alone carries at most 4 bits a character, under both limits), and not a
    digest's ``sha512-``/``sha256:`` prefix (the rule skips those)."""
    at_start = [(r"[g-rt-zG-Z+/]", 1), (r"s[A-Za-gi-z0-9+/=_-]", 2), (r"sh[A-Zb-z0-9+/=_-]", 3),
                (r"sha[A-Za-z+/=_-]", 4)]
    alts = [f"{x}{_B64}{{{20 - n}}}" for x, n in at_start]
    alts += [f"{_HEXISH}{{{k}}}[g-zG-Z+/]{_B64}{{{19 - k}}}" for k in range(1, 19)]
    alts.append(f"{_HEXISH}{{19,}}[g-zG-Z+/]")
    return "(?:" + "|".join(alts) + ")"


#: ``name = value`` (``_ASSIGNMENT`` of the detector): a name of three or more
#: characters, and a value as above. The hex commit ids, UUIDs and digests of a build log
#: (and go.sum's ``h1:``, npm's ``sha512-``) and short values (``PATH=/usr/bin``) are no
#: candidates. Left out: a value of hex digits in both cases and ``_=-`` only, which needs
#: 23 distinct characters of those 25 to pass the 4.5-bit limit.
_ENTROPY_TRIGGER = rf"[A-Za-z_][A-Za-z0-9_.-]{{2,}}[\"']?[ \t]*[:=][ \t]*[\"'`]?{_entropy_value()}"
#: The same, looser (and 3x cheaper for Hyperscan and RE2: shorter counted runs), for the
#: pass over every byte; a line it finds is confirmed with the exact trigger.
_ENTROPY_PREFILTER = (rf"[A-Za-z0-9_.-]{{3}}[\"']?[ \t]*[:=][ \t]*[\"'`]?"
                      rf"(?:(?:[g-rt-zG-Z+/]|s[A-Za-gi-z0-9+/=_-]|sh[A-Zb-z0-9+/=_-]|sha[A-Za-z+/=_-])"
                      rf"{_B64}{{12}}|{_HEXISH}{{1,7}}[g-zG-Z+/]{_B64}{{12}}|{_HEXISH}{{8,}}[g-zG-Z+/])")


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
    "high-entropy": _ENTROPY_TRIGGER,
}


#: Looser patterns for the pass over every byte, where the exact trigger costs more
#: there (each matches wherever its trigger does: tests/context/secrets/test_engine.py).
PREFILTERS: dict[str, str] = {"high-entropy": _ENTROPY_PREFILTER}


def prefilter(kind: str) -> str:
    """The pattern the chunk pass looks for, for rule ``kind``."""
    return PREFILTERS.get(kind) or TRIGGERS[kind]


@functools.cache
def _union() -> Callable[[bytes], object]:
    import re2

    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1  # bytes: ``[\x80-\xff]`` is any non-ASCII byte
    opts.never_capture = True
    search: Callable[[bytes], object] = re2.compile(
        "|".join(f"(?:{prefilter(k)})" for k in TRIGGERS).encode(), opts).search
    return search


def may_hold_secret(data: bytes) -> bool:
    """Could masking change ``data``? False only when no rule's trigger matches anywhere in it.

    Exact as a "no": every line a rule can flag matches that rule's trigger (the
    detector's own prefilter relies on it, and tests/test_context_secrets.py checks it),
    and the detector has no rule without one (``SecretDetector.untriggered`` is empty).
    """
    return _union()(data) is not None
