"""The tree stays typed and linted: ruff and mypy strict run as part of the suite."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> list[str]:
    """Run the tool from the interpreter's environment (what `.ci/run` installs)."""
    exe = Path(sys.executable).with_name(name)
    return [str(exe)] if exe.exists() else [shutil.which(name) or name]


def test_ruff_is_clean() -> None:
    """ruff reports nothing on the package, tests and benchmarks."""
    proc = subprocess.run([*_tool("ruff"), "check", "s3spill", "tests", "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    """mypy --strict (configured in pyproject) finds no error in s3spill/."""
    proc = subprocess.run([*_tool("mypy")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_function_over_the_complexity_limit_hides_behind_a_noqa() -> None:
    """The limit is the house's 12 and no `noqa: C901` exempts a function from it."""
    assert "max-complexity = 12\n" in (ROOT / "pyproject.toml").read_text()
    marked = [f"{path.relative_to(ROOT)}:{n}" for top in ("s3spill", "tests", "benchmarks")
              for path in sorted((ROOT / top).rglob("*.py"))
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
