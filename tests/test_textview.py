"""The display form's grapheme rule asks the Unicode database only where it can answer yes."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill import textview


def test_no_character_below_the_first_mark_extends_the_one_before() -> None:
    """Every character below U+0300 is neither combining nor a mark (the shortcut's premise),
    and ``_extends`` gives the database's answer for every character of the BMP and beyond."""
    for o in range(textview._FIRST_MARK):
        ch = chr(o)
        assert unicodedata.combining(ch) == 0 and unicodedata.category(ch) not in ("Mn", "Me", "Mc"), hex(o)
    for o in [*range(0x300, 0x3000), 0xFE00, 0xFE0F, 0x200D, 0x1F3FB, 0xE0020, 0xE007F, 0x10FFFF]:
        ch = chr(o)
        joiner = o == 0x200D or 0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F
        by_db = joiner or unicodedata.combining(ch) != 0 or unicodedata.category(ch) in ("Mn", "Me", "Mc")
        assert textview._extends(ch) == by_db, hex(o)
    assert textview.grapheme_cut("e\u0301e\u0301", 3) == 2 and textview.grapheme_cut("abcd", 2) == 2


def test_the_text_module_loads_no_unicode_database() -> None:
    """A page read or grep that cuts no line past U+0300 never loads ``unicodedata``."""
    code = ("import sys; from s3spill import textview; textview.grapheme_cut('abc', 2);"
            " print('unicodedata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


_UNITS = ["a", "\\", "\u00e9", "\u4e2d", "\U0001f600", "\udc80", "\udcff", "\udc7f", "\ud800", "\udfff", "\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_UNITS), max_size=12).map("".join) | st.text(max_size=20))
def test_the_search_free_answers_are_the_regular_expressions(text: str) -> None:
    """``has_bad_bytes`` and ``cost``, which skip the search for surrogate-free text, answer as
    the search of ``[\\udc80-\\udcff]`` does: lone surrogates outside that range included."""
    bad = len(re.findall("[\udc80-\udcff]", text))
    assert textview.has_bad_bytes(text) is (bad > 0)
    assert textview.cost(text) == len(text) + text.count("\\") + 3 * bad


def test_valid_text_is_shown_without_importing_re() -> None:
    """A page or grep of valid UTF-8, ASCII or not, never imports ``re`` (~4 ms with ``enum``)."""
    code = ("import sys; from s3spill import textview; t = 'caf\\u00e9 \\u4e2d'; textview.escape(t);"
            " textview.cost(t); textview.has_bad_bytes(t); print('re' in sys.modules)")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])}).stdout
    assert out.split() == ["False"]
