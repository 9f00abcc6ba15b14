"""The anchor precheck never calls a text clean where a secret rule's trigger fires."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3spill.context.secrets.anchors import ANCHORS, no_anchor
from s3spill.context.secrets.triggers import TRIGGERS, may_hold_secret
from tests.examples import examples


@pytest.mark.parametrize("rule", sorted(TRIGGERS))
@settings(max_examples=examples(suite=20, thorough=60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_of_every_trigger_holds_an_anchor(rule: str, data: st.DataObject) -> None:
    """Bytes generated to match a rule's trigger (Python's reading of the RE2 pattern) are
    never called clean, and RE2 agrees that they match."""
    pattern = TRIGGERS[rule].encode()
    match = data.draw(st.from_regex(re.compile(pattern), fullmatch=True))
    assert not no_anchor(match), (rule, match)
    assert not no_anchor(b"lead " + match + b" tail")


#: Texts near the anchors: letters of them, digits, spaces, punctuation, non-ASCII bytes.
NEAR = st.lists(st.sampled_from([b"hi", b"k", b"ey", b"pas", b"A3", b"AKI", b"x", b"0123456789", b" ", b"\n",
                                 b"-", b"_", b"/", b"@", b"\xc3\xa9", b"\xff", b"S", b"G", b"AC", b"ghp",
                                 b"aws", b"KEY", b"ok", b"done", b"\t", b"'", b'"']), max_size=60)


@settings(max_examples=examples(suite=100, thorough=400), deadline=None)
@given(pieces=NEAR)
def test_a_text_without_an_anchor_fires_no_trigger(pieces: list[bytes]) -> None:
    """Where the precheck says clean, the RE2 unions (loose and exact) say so too."""
    text = b"".join(pieces)
    if no_anchor(text):
        assert not may_hold_secret(text), text


def test_the_anchors_are_lower_case_and_a_small_output_is_clean() -> None:
    """The text is lowered before the search, so an anchor must be lower-case to be found."""
    assert all(a == a.lower() for a in ANCHORS)
    assert no_anchor(b"hi\n") and not no_anchor(b"AKIA") and not no_anchor(b"x=1")


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from([b":", b"=", b".", b"KEY", b"Pass", b"x", b"AKIA", b"\xc3\x89",
                                        b"\xff", b" ", b"ghp_", b"-US1", b"aws"]), max_size=20))
def test_the_uncased_anchors_first_answer_as_the_lowered_search(pieces: list[bytes]) -> None:
    """Looking for ``:``, ``=`` and ``.`` before lowering the text changes no answer."""
    text = b"".join(pieces)
    assert no_anchor(text) == (not any(anchor in text.lower() for anchor in ANCHORS))
