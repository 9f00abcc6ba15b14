"""Whether a matched value is a secret: the entropy rule and the keyword rules' value tests.

Split from :mod:`.detector` (which finds the matches and runs the rules) because these are
the decisions about one value — how much entropy, a digest, a placeholder, a name in code —
and :mod:`.triggers` must keep in step with the entropy rule's (its trigger relies on
:data:`_PLAIN_DISTINCT` and the digests skipped). Pure: no I/O.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections import Counter

from s3spill.context.secrets.triggers import BASE64_ALPHABET

__all__ = ["code_value", "dummy_url", "entropy_spans", "plain_value", "shannon_entropy"]

#: ``NAME = value`` / ``"name": "value"`` with a long value from the base64 alphabet.
_ASSIGNMENT = re.compile(
    rf"(?P<name>[A-Za-z_][A-Za-z0-9_.-]{{2,64}})[\"']?[ \t]*[:=][ \t]*[\"'`]?"
    rf"(?P<value>[{BASE64_ALPHABET}]{{20,}})")
#: Digests are high-entropy and public: ``sha512-…`` (npm integrity), ``h1:…`` (go.sum).
_DIGEST_VALUE = re.compile(r"^(?:sha(?:1|224|256|384|512)[-:_]|md5[-:]|h1:)", re.IGNORECASE)

_ENTROPY_LIMIT = 4.5
_SECRETISH_LIMIT = 3.8
#: The fewest distinct characters whose entropy can exceed each limit (2**3.8 = 13.9,
#: 2**4.5 = 22.6); :mod:`.triggers` relies on the second.
_SECRETISH_DISTINCT = 14
_PLAIN_DISTINCT = 23
_SECRETISH = re.compile(r"(?i)token|secret|passw|api_?key|private|credential|auth")
_MIXED = re.compile(r"(?=.*[0-9])(?=.*[g-rt-zG-Z+/])")  # the trigger needs a letter past f
#: An alphabet or a counting run (``ABCDEFGH…``, ``0123456789``) is a constant, not a secret.
_SEQUENTIAL = re.compile(r"ABCDEFGH|abcdefgh|0123456789|qwertyui", re.IGNORECASE)
#: A keyword value that is a word, a path or a placeholder says nothing secret.
_NOT_SECRET = re.compile(
    r"^(?:true|false|null|none|nil|yes|no|required|optional|redacted|hidden|changeme|"
    r"\**|x+|<[^>]*>|\[redacted[^\]]*\]\**|"
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|%\(?\w+\)?s?)$", re.IGNORECASE)


def shannon_entropy(value: str) -> float:
    """Bits per character, as detect-secrets' ``Base64HighEntropyString`` measures them for a
    value within its alphabet; counted in one pass (its per-alphabet-letter loop is 15x
    slower, and this runs on every assignment a build log prints)."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


#: Stand-ins that tests, docs and examples put where a password goes (``user:pass@``).
_DUMMY = re.compile(r"^(?:pass(?:word|wd)?|secret|test(?:ing)?|p|pw|pwd|x+|\*+|foo|bar|baz|user(?:name)?|"
                    r"token|key|example|dummy|fake|\{\w*\}|%s|\$\{?\w+\}?|\W*(?:pass\W*)+|…)$",
                    re.IGNORECASE)
_URL_PASSWORD = re.compile(r"://[^:/@\s]*:([^@\s]*)@")
#: A keyword's value that is code, not a literal: a name (``self.password``, ``None,``) or
#: an expression (``get_auth_from_url(proxy)``, ``options[``); a literal secret holds a
#: digit or a symbol, or is quoted.
_CODE_VALUE = re.compile(r"[A-Za-z_][A-Za-z_.]*[,:;]?|.*[()\[\]].*")
#: A quoted keyword value without a digit that is one lower-case word or an upper-case
#: placeholder (``secrets="off"``, ``'YOUR_APP_SECRET'``) is a setting, not a credential.
_WORD_VALUE = re.compile(r"[a-z][a-z_.-]{0,23}|[A-Z][A-Z_]{2,63}|[a-z][a-z0-9_-]*(?:\.[a-z][a-z0-9_-]*){2,}")
#: A value built by a format string (``f"password={AWS_SECRET}"``) names a variable.
_TEMPLATE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_.]*(?:![rsa])?(?::[^}]*)?\}")


def dummy_url(value: str) -> bool:
    """A URL whose password is a stand-in (``https://user:pass@``, ``{0}:{1}@``)."""
    m = _URL_PASSWORD.search(value)
    return m is not None and bool(_DUMMY.match(urllib.parse.unquote(m.group(1))))


def code_value(value: str, quoted: bool) -> bool:
    bare = value.strip().strip("'\"`,;")
    if len(bare) < 4 or _TEMPLATE.search(bare):  # too short to matter, or a variable's name
        return True
    return bool(_WORD_VALUE.fullmatch(bare)) if quoted else bool(_CODE_VALUE.fullmatch(bare))


def plain_value(value: str) -> bool:
    return bool(_NOT_SECRET.match(value)) or value.startswith(("/", "~", "./", "../")) \
        or not any(c.isalnum() for c in value)


def entropy_spans(line: str) -> list[tuple[int, int]]:
    """The high-entropy rule: each assignment's value (``_ASSIGNMENT``) whose entropy
    passes its limit, as character spans of ``line``."""
    out = []
    for match in _ASSIGNMENT.finditer(line):
        value = match.group("value")
        # Entropy is at most log2 of the number of distinct characters: under 14 of
        # them no value can pass either limit, under 23 not the plain one (exact, and
        # far cheaper than measuring).
        distinct = len(set(value))
        if distinct < _SECRETISH_DISTINCT:
            continue
        if _DIGEST_VALUE.match(value) or _DIGEST_VALUE.match(line[match.start("value"):][:8]):
            continue
        if _SEQUENTIAL.search(value):
            continue
        # A name that says "secret" needs less proof: a 32-character random token can
        # measure under 4.5 bits, but not under 3.8 with letters and digits mixed.
        secretish = bool(_SECRETISH.search(match.group("name"))) and bool(_MIXED.match(value))
        if not secretish and distinct < _PLAIN_DISTINCT:
            continue
        if shannon_entropy(value) > (_SECRETISH_LIMIT if secretish else _ENTROPY_LIMIT):
            out.append(match.span("value"))
    return out
