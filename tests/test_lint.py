"""The tree stays typed and linted: ruff and mypy strict run as part of the suite."""

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
