"""The detector loads detect-secrets only for a line that fires one of its rules, exactly as strong."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.context.secrets import redact_text
from s3spill.context.secrets.detector import (
    LIBRARY_VERSION,
    TRIGGERS,
    SecretDetector,
    default_detector,
    library_version,
    shannon_entropy,
)
from tests.examples import examples

ROOT = Path(__file__).resolve().parents[3]
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"

PROBE = """
import sys
from s3spill.context.secrets import detector
from s3spill.context.secrets.masking import mask_window
log = b"".join(b"%d GET path=/api/v1/items/x/%08d status=200\\n" % (i, i * 7) for i in range(500))
assert mask_window(log).data == log
print(detector._DETECTOR is not None, "detect_secrets" in sys.modules)
token = b"SERVICE_SESSION_TOKEN=Jq4Zr8Xw2Nc6Vb0Mk3Lp7Hs1Dg5Ft9Ay2Ue4Io6\\n"
print(dict(mask_window(log + token).counts), "detect_secrets" in sys.modules)
print(dict(mask_window(b"export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\\n").counts),
      "detect_secrets" in sys.modules)
"""


def test_own_rules_run_without_the_library_and_its_rules_load_on_their_first_trigger() -> None:
    """Our own rule's candidates only: no detect-secrets import, a token still masked; an AWS key loads it."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout.splitlines()
    assert out == ["True False", "{'high-entropy': 1} False", "{'aws-key': 1} True"]


def test_the_triggers_were_checked_against_the_installed_library() -> None:
    """The lazy prefilter is exact for this release; tests of every rule run against it."""
    assert library_version() == LIBRARY_VERSION


def test_a_detector_built_at_once_has_the_same_rules_and_findings() -> None:
    """With another release installed the library loads at once; for this one, nothing differs."""
    eager, lazy = SecretDetector(lazy=False), SecretDetector(lazy=True)
    assert eager._library is not None and lazy._library is None
    assert [(r.kind, r.trigger) for r in eager.rules] == [(r.kind, r.trigger) for r in lazy.rules]
    assert eager._kinds == list(TRIGGERS) and eager.untriggered == []
    line = b"AWS_KEY=AKIAIOSFODNN7EXAMPLE token=ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    assert eager.scan_line(line) == SecretDetector(lazy=True).scan_line(line) != []


def _values(draw_len: int, distinct: int, rng: random.Random) -> str:
    alphabet = rng.sample(B64, distinct)
    return "".join(alphabet[i % distinct] if i < distinct else rng.choice(alphabet) for i in range(draw_len))


@settings(max_examples=examples(suite=100, thorough=400), deadline=None)
@given(st.integers(20, 30), st.integers(12, 30), st.sampled_from(["path", "TOKEN", "my_auth", "x.id", "key"]),
       st.sampled_from(["=", ": ", " = '", '":"']), st.randoms(use_true_random=False))
def test_no_value_the_entropy_rule_flags_escapes_its_length_bound(length: int, distinct: int, name: str,
                                                                   assign: str, rng: random.Random) -> None:
    """Values around the bound (20-30 characters, 12-30 distinct): flagged means triggered."""
    value = _values(length, min(distinct, length), rng)
    line = f"{name}{assign}{value}".encode()
    detector = default_detector()
    found = detector.scan_line(line, every_rule=True)
    if any(f.kind == "high-entropy" for f in found):
        assert detector.next_candidate(line) >= 0
        assert detector.scan_line(line) == found


@pytest.mark.parametrize("value", ["/api/v1/items/00000014", "Jq4Zr8Xw2Nc6Vb0Mk3Lp7"])
def test_a_short_value_after_a_plain_name_is_no_candidate(value: str) -> None:
    """Under 23 characters nothing passes 4.5 bits: the line costs one RE2 pass, not a rule."""
    assert shannon_entropy(value) < 4.5
    assert default_detector().next_candidate(f"GET path={value} status=200".encode()) < 0
    assert default_detector().next_candidate(f"API_TOKEN={value}".encode()) >= 0


@pytest.mark.parametrize("name", ["config.v2", "x.id", "db-1", "key.2"])
def test_a_name_whose_last_three_characters_start_with_a_digit_dot_or_dash_is_masked(name: str) -> None:
    """``config.v2=<token>``: the rule flags it; the trigger once needed a letter three before ``=``."""
    masked, counts = redact_text(f"{name}=Jq4Zr8Xw2Nc6Vb0Mk3Lp7Hs1Dg5Ft9Ay2Ue4Io6")
    assert counts == {"high-entropy": 1} and "Jq4Z" not in masked


def test_a_text_only_the_loose_prefilter_matches_holds_no_secret() -> None:
    """``path=/api/v1/items/00000014`` matches the loose entropy prefilter, neither the
    sieve of ``may_hold_secret``'s first pass nor an exact trigger: "no"."""
    from s3spill.context.secrets.triggers import PREFILTERS, _sieve_union, _union, may_hold_secret

    line = b"0000000014 INFO  request handled path=/api/v1/items/00000014 status=200\n"
    import re2

    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1
    assert re2.compile(PREFILTERS["high-entropy"].encode(), opts).search(line) is not None
    assert _union(False)(line) is not None and _sieve_union()(line) is None and _union(True)(line) is None
    assert not may_hold_secret(line * 100)
    assert may_hold_secret(line + b"API_TOKEN=Jq4Zr8Xw2Nc6Vb0Mk3Lp7\n")
