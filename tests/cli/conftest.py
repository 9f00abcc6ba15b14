"""Fixtures of the CLI tests: the CLI called in this process against a fresh local store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from s3spill.cli import main
from s3spill.store.local import LocalStore

#: ``cli(*argv)`` -> (exit code, stdout, stderr); a usage error's SystemExit is its code.
CliCall = Callable[..., tuple[int, str, str]]


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalStore:
    """A fresh local store and session ``s``, named to the CLI through the environment."""
    monkeypatch.setenv("S3SPILL_STORE", (tmp_path / "store").as_uri())
    monkeypatch.setenv("S3SPILL_SESSION", "s")
    for name in ("CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID"):
        monkeypatch.delenv(name, raising=False)
    return LocalStore(tmp_path / "store")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> CliCall:
    """Run ``s3spill ARGV`` in this process and return what it said."""
    capsys.readouterr()

    def call(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return call
