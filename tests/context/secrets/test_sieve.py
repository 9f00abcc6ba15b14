"""The sieves of ``may_hold_secret``'s first pass match wherever a rule's exact trigger does."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from s3spill.context.secrets.triggers import SIEVES, TRIGGERS, _sieve_union, _union, may_hold_secret, sieve
from tests.examples import examples


def _re2(pattern: str) -> Callable[[bytes], object]:
    import re2

    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1
    opts.never_capture = True
    opts.max_mem = 64 << 20
    search: Callable[[bytes], object] = re2.compile(pattern.encode(), opts).search
    return search


@pytest.mark.parametrize("rule", sorted(TRIGGERS))
@settings(max_examples=examples(suite=25, thorough=80), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_of_every_trigger_passes_its_sieve_and_the_union(rule: str, data: st.DataObject) -> None:
    """Bytes generated to match a rule's trigger (Python's reading of the RE2 pattern) match
    the rule's sieve and the sieves' union, with text around them or not."""
    match = data.draw(st.from_regex(re.compile(TRIGGERS[rule].encode()), fullmatch=True))
    assert _re2(TRIGGERS[rule])(match) is not None  # RE2 reads the trigger as Python does
    for text in (match, b"lead " + match + b" tail\n"):
        assert _re2(sieve(rule))(text) is not None, (rule, text)
        assert _sieve_union()(text) is not None, (rule, text)


#: Pieces near the entropy trigger's edges: names, assignments, quotes, runs of the base64
#: alphabet just under and over 20 and 23 characters, hex of one case and both, digests.
_PIECES = st.sampled_from([
    "path", "token", "API_KEY", "secret", "x", "cfg.v2", "=", ":", " ", "\t", "'", '"', "`", "==", ":=",
    "/api/v1/items/00000014", "/api/v1/items/000000140", "Jq4Zr8Xw2Nc6Vb0Mk3Lp7", "Jq4Zr8Xw2Nc6Vb0Mk3Lp7Hs",
    "Jq4Zr8Xw2Nc6Vb0Mk3Lp7Hs1", "0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123", "aB-", "fA_",
    "sha512-", "md5-", "sha1_", "+/", "-", "_", "0000", "zzzz", "\n", "\xe9"])


@settings(max_examples=examples(suite=150, thorough=600), deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(alphabet="aZf9+/=_-.:@ \"'", max_size=30)), max_size=10))
@example(["path=", "Jq4Zr8Xw2Nc6Vb0Mk3Lp7Hs"])
@example(["token", "=", "Jq4Zr8Xw2Nc6Vb0Mk3Lp"])
@example(["x", "=", " ", "'", "0123456789abcdefABC-"])
def test_wherever_the_exact_trigger_matches_the_sieve_does(parts: list[str]) -> None:
    """Rule by rule and as unions: the sieve may match more than the exact trigger, never less."""
    line = "".join(parts).encode("utf-8", "surrogateescape")
    for kind in SIEVES:
        if _re2(TRIGGERS[kind])(line) is not None:
            assert _re2(SIEVES[kind])(line) is not None, (kind, line)
    if _union(True)(line) is not None:
        assert _sieve_union()(line) is not None and _union(False)(line) is not None, line
        assert may_hold_secret(line)


def test_a_request_log_passes_the_sieve_and_a_longer_value_does_not() -> None:
    """``path=/api/v1/items/00000014`` (22 characters) matches the loose prefilter, not the
    sieve: the exact union is not compiled for it. One character more and the exact trigger
    matches (the value holds ``/``, a character no hex digit is), and so does the sieve."""
    from s3spill.context.secrets.triggers import PREFILTERS

    line = b"0000000014 INFO  request handled path=/api/v1/items/00000014 status=200 duration_ms=00014\n"
    assert _re2(PREFILTERS["high-entropy"])(line) is not None
    assert _sieve_union()(line * 100) is None and not may_hold_secret(line * 100)
    longer = line.replace(b"00000014 ", b"000000140 ")
    assert _union(True)(longer) is not None and _sieve_union()(longer) is not None and may_hold_secret(longer)
    assert may_hold_secret(line + b"API_TOKEN=Jq4Zr8Xw2Nc6Vb0Mk3Lp7\n")


def test_a_digest_passes_the_prefilter_where_it_does_not_pass_the_sieve() -> None:
    """A hex digest after ``:`` is 64 characters of the alphabet (the sieve matches) but holds
    no letter past ``f`` (the prefilter does not): the exact union is not compiled for it."""
    line = b"#5 resolve docker.io/library/python@sha256:" + b"e3b0c44298fc1c149afbf4c8996fb924" * 2 + b"\n"
    assert _sieve_union()(line) is not None and _union(False)(line) is None
    assert not may_hold_secret(line * 50)
