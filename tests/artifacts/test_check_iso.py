"""The fast read's check of a stored time refuses exactly what ``datetime.fromisoformat`` refuses."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.artifacts.index_fields import _plain_utc, check_iso
from tests.examples import examples


def _reads(value: str) -> bool:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _checks(value: str) -> bool:
    try:
        check_iso(value)
    except ValueError:
        return False
    return True


DIGITS = st.text(alphabet="0123456789", min_size=2, max_size=2)
#: Times in the writers' shape with any digits (month 00 or 13, 29 February of any year, hour 24,
#: second 60, year 0000 ...), and near it: another separator, a short fraction, other offsets.
SHAPED = st.builds(
    lambda y, mo, d, h, mi, s, sep, frac, tail: f"{y}-{mo}-{d}{sep}{h}:{mi}:{s}{frac}{tail}",
    st.one_of(st.text(alphabet="0123456789", min_size=4, max_size=4), st.sampled_from(
        ["0000", "0001", "1900", "2000", "2024", "2026", "2100", "9999"])),
    st.one_of(DIGITS, st.sampled_from(["00", "01", "02", "12", "13"])),
    st.one_of(DIGITS, st.sampled_from(["00", "28", "29", "30", "31", "32"])),
    st.one_of(DIGITS, st.sampled_from(["00", "23", "24"])), DIGITS,
    st.one_of(DIGITS, st.sampled_from(["59", "60"])), st.sampled_from(["T", "T", "T", " ", "t"]),
    st.sampled_from(["", ".123456", ".000000", ".999999", ".12345", ".1234567", ",123456"]),
    st.sampled_from(["Z", "+00:00", "Z", "+00:00", "+01:00", "z", "-00:00", "", "+0000"]))


@settings(max_examples=examples(suite=300, thorough=2000), deadline=None)
@given(value=SHAPED)
def test_a_time_in_the_writers_shape_is_checked_as_fromisoformat_reads_it(value: str) -> None:
    """Every field out of range, leap days of leap and common years, and the shape's neighbours."""
    assert _checks(value) == _reads(value), value


@settings(max_examples=examples(suite=100, thorough=500), deadline=None)
@given(value=st.text(max_size=40))
def test_any_other_string_is_checked_as_fromisoformat_reads_it(value: str) -> None:
    """Arbitrary text, non-ASCII digits included: the same verdict."""
    assert _checks(value) == _reads(value), value


@pytest.mark.parametrize("value", [
    "2026-12-03T13:40:36.123456+00:00", "2026-12-03T13:40:36+00:00", "2026-12-03T13:40:36.123456Z",
    "2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z", "2026-12-03T24:00:00Z", "0000-01-01T00:00:00Z",
    "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-00-10T00:00:00Z",
    "2026-13-10T00:00:00Z", "2026-12-00T00:00:00Z", "2026-12-31T23:59:60Z", "2026-12-31T23:60:00Z",
    "\u0662\u0660\u0662\u0666-12-03T13:40:36Z", "2026-12-03T13:40:36.12345\u0666Z"])
def test_the_writers_shape_is_decided_without_datetime(value: str) -> None:
    """Both writers' spellings (the store's ``+00:00``, the index's ``Z``) are decided by the field
    check, valid or not; non-ASCII digits are left to fromisoformat."""
    plain = _plain_utc(value)
    assert (plain is None) is (not value.isascii())
    assert _checks(value) == _reads(value)
