"""The written-out trigger patterns are the ones the builder builds, so the two never drift (issue 35)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.context.secrets import trigger_build, trigger_patterns, triggers

NAMES = ["BASE64_ALPHABET", "TRIGGERS", "PREFILTERS", "SIEVES", "PREFILTER_PARTS"]


@pytest.mark.parametrize("name", NAMES)
def test_each_written_out_table_is_the_builders_in_order(name: str) -> None:
    """Every pattern of the generated module equals the builder's, rule for rule and in the same
    order (the unions join them in that order), and the triggers module serves those."""
    written, built = getattr(trigger_patterns, name), getattr(trigger_build, name)
    assert written == built
    if isinstance(built, dict):
        assert list(written) == list(built)
    assert getattr(triggers, name) is written


def test_the_generated_module_is_what_the_builder_writes() -> None:
    """The file's text is the builder's ``source()``: rerun ``python -m
    s3spill.context.secrets.trigger_build`` after changing a pattern."""
    assert trigger_build._GENERATED.read_text(encoding="utf-8") == trigger_build.source()
    assert trigger_build._GENERATED.resolve() == Path(trigger_patterns.__file__).resolve()


def test_a_page_reads_import_builds_no_pattern() -> None:
    """Importing the triggers in a fresh process does not load the builder."""
    code = ("import sys; import s3spill.context.secrets.triggers; "
            "print('s3spill.context.secrets.trigger_build' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
