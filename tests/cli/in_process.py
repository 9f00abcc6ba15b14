"""In-process CLI calls for tests: the exit code and what was printed, against a local store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from s3spill.cli import main
from s3spill.store.local import LocalStore


def cli_call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``s3spill ARGV`` in this process: (exit code, stdout, stderr)."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def local_cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session: str) -> LocalStore:
    """Point the CLI at a fresh local store and ``session`` through the environment."""
    monkeypatch.setenv("S3SPILL_STORE", (tmp_path / "store").as_uri())
    monkeypatch.setenv("S3SPILL_SESSION", session)
    return LocalStore(tmp_path / "store")


def cli_env_fixture(session: str) -> Any:
    """A test module's ``env`` fixture: :func:`local_cli_env` for ``session``."""

    @pytest.fixture
    def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalStore:
        return local_cli_env(tmp_path, monkeypatch, session)

    return env
