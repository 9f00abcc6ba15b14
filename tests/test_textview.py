"""The display form's grapheme rule asks the Unicode database only where it can answer yes."""

from __future__ import annotations

import subprocess
import sys
import unicodedata

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
