"""The suite's smaller Hypothesis budgets are all run at their thorough counts by ``.ci/run``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import settings

from tests.examples import PROFILE, THOROUGH, examples

ROOT = Path(__file__).resolve().parents[1]


def _thorough_files() -> set[str]:
    """The files of ``.ci/run``'s ``THOROUGH_FILES=( ... )`` list."""
    found = re.search(r"^THOROUGH_FILES=\(\n(.*?)^\)$", (ROOT / ".ci" / "run").read_text(), re.M | re.S)
    assert found, ".ci/run has no THOROUGH_FILES=( ... ) list"
    return {line.strip() for line in found.group(1).splitlines() if line.strip()}


def test_every_file_with_a_suite_budget_runs_in_the_thorough_step() -> None:
    """The files that call ``examples(...)`` are exactly those ``.ci/run`` runs under the thorough profile."""
    callers = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
               if "examples(suite=" in p.read_text(encoding="utf-8") and p.name != Path(__file__).name}
    assert callers, "no test calls examples(): the thorough step would collect nothing"
    assert _thorough_files() == callers


def test_the_loaded_profile_decides_the_budget() -> None:
    """The profile named by the environment is Hypothesis's default and picks one of a test's two counts."""
    assert settings.default.max_examples == settings.get_profile(PROFILE).max_examples
    assert examples(suite=3, thorough=30) == (30 if THOROUGH else 3)


def test_a_suite_budget_over_the_thorough_one_is_refused() -> None:
    """A suite count above the thorough one, or not positive, is refused when the test is defined."""
    with pytest.raises(ValueError, match="need 0 < suite <= thorough"):
        examples(suite=300, thorough=30)
    with pytest.raises(ValueError, match="need 0 < suite <= thorough"):
        examples(suite=0, thorough=30)
