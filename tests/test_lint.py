"""The house's size rules, read from the source (cheap, so they run in the suite).

ruff and mypy strict run before the suite as the lint step of `.ci/run` (a cold mypy
costs about a minute of CPU, too much for a test): see docs/development.md.
"""

import ast
from pathlib import Path

from tests.sources import python_files

ROOT = Path(__file__).resolve().parents[1]


def test_no_function_over_the_complexity_limit_hides_behind_a_noqa() -> None:
    """The limit is the house's 12 and no `noqa: C901` exempts a function from it."""
    assert "max-complexity = 12\n" in (ROOT / "pyproject.toml").read_text()
    marked = [f"{path.relative_to(ROOT)}:{n}" for top in ("s3spill", "tests", "benchmarks")
              for path in python_files(top)
              for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if "noqa: C901" in line and path.name != "test_lint.py"]
    assert marked == []


def test_a_long_module_says_why_in_its_docstring() -> None:
    """A module of s3spill/ over 450 lines states in its docstring why it is one job that long."""
    unexplained = []
    for path in sorted((ROOT / "s3spill").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 450:
            doc = ast.get_docstring(ast.parse(text)) or ""
            if "450 lines" not in doc:
                unexplained.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert unexplained == []
