"""The ``s3spill`` command is a plain launcher script that imports nothing before ``main`` (issue 35)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.cli.conftest import ROOT, site_free_env

LAUNCHER = ROOT / "launcher" / "s3spill"


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The launcher under ``python -S -X importtime`` with the checkout and site-packages on its path
    by hand (no ``.pth``, so the editable install's finder imports nothing first)."""
    return subprocess.run([sys.executable, "-S", "-X", "importtime", str(LAUNCHER), *argv],
                          capture_output=True, text=True, env=site_free_env(tmp_path, "launcher"), timeout=60,
                          check=False)


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_the_package_installs_the_launcher_and_no_generated_entry_point() -> None:
    """pyproject names the launcher as the one script (pip's generated launcher imports ``re``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["script-files"] == ["launcher/s3spill"]
    assert "scripts" not in project["project"]
    assert LAUNCHER.read_text().startswith("#!python\n") and os.access(LAUNCHER, os.X_OK)


def test_a_small_run_through_the_launcher_keeps_output_and_status_without_re(tmp_path: Path) -> None:
    """``s3spill run`` of a small output prints it with the command's exit status, and neither the
    launcher nor the fast path imports ``re``, ``functools`` or ``subprocess``."""
    done = _run(tmp_path, "run", "--", "sh", "-c", "echo hi; exit 3")
    assert (done.returncode, done.stdout) == (3, "hi\n")
    assert not _imported(done.stderr) & {"re", "functools", "subprocess", "selectors", "enum"}


def test_the_launcher_is_the_command(tmp_path: Path) -> None:
    """``--version`` through the launcher prints what the package's main prints."""
    done = _run(tmp_path, "--version")
    assert done.returncode == 0 and done.stdout.startswith("s3spill ")
