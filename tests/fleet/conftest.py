"""Shared setup of the fleet tests: an environment with no policy but the test's own."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def fleet_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No S3SPILL_* variable, empty config dirs, the ``local_store`` (tmp_path/store) and a
    session through the environment; returns tmp_path (the working directory is tmp_path/work)."""
    for name in list(os.environ):
        if name.startswith("S3SPILL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home-config"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "system-config"))
    monkeypatch.setenv("S3SPILL_STORE", (tmp_path / "store").as_uri())
    monkeypatch.setenv("S3SPILL_SESSION", "fleet-session")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


@pytest.fixture
def write_policy(tmp_path: Path) -> Callable[..., Path]:
    """Write a policy file (TOML text) and return its path."""

    def write(text: str, name: str = "policy.toml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write

