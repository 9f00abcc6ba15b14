"""After `cd subdir`, an id of the directory's session is refused with both sessions named,
where each came from, and how to pick the id's session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from s3spill.cli.argtypes import directory_session
from s3spill.store.local import LocalStore
from tests.cli.conftest import CliCall


@pytest.fixture
def spilled(cli: CliCall, local: LocalStore, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """An output spilled in directory ``work`` under its directory session (no session named)."""
    monkeypatch.delenv("S3SPILL_SESSION")
    monkeypatch.delenv("OLDPWD", raising=False)
    work = (tmp_path / "work").resolve()
    (work / "sub").mkdir(parents=True)
    monkeypatch.chdir(work)
    (work / "out.txt").write_text("hello\n")
    code, out, err = cli("spill", "out.txt")
    assert code == 0, err
    return out.splitlines()[0], work


def test_cd_subdir_names_both_directory_sessions(cli: CliCall, spilled: tuple[str, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The id's session is the parent directory's; the call's is the subdirectory's."""
    sid, work = spilled
    monkeypatch.chdir(work / "sub")
    code, _, err = cli("read", sid)
    assert code == 2 and err.count("\n") == 1, err
    assert (f"belongs to session {directory_session(str(work))} of the working directory {work}, "
            f"not to this call's session {directory_session(str(work / 'sub'))} of the working "
            f"directory {work / 'sub'}") in err
    assert err.rstrip().endswith(f"(run it from {work}, or pass --session "
                                 f"{directory_session(str(work))} or set S3SPILL_SESSION="
                                 f"{directory_session(str(work))})")


def test_a_named_session_is_said_to_be_named(cli: CliCall, spilled: tuple[str, Path],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """With --session or $S3SPILL_SESSION the call's session is said to come from there."""
    sid, work = spilled
    code, _, err = cli("--session", "other", "read", sid)
    assert code == 2 and "not to this call's session other named by --session" in err
    monkeypatch.setenv("S3SPILL_SESSION", "other")
    code, _, err = cli("grep", sid, "x")
    assert code == 2 and "not to this call's session other named by $S3SPILL_SESSION" in err
    assert f"of the working directory {work}" in err


def test_the_directory_before_cd_is_found_too(cli: CliCall, spilled: tuple[str, Path],
                                              monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In a sibling directory, $OLDPWD (the directory before the last cd) names the owner."""
    sid, work = spilled
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("OLDPWD", str(work))
    assert f"belongs to session {directory_session(str(work))}" in cli("read", sid)[2]
    monkeypatch.delenv("OLDPWD")
    code, _, err = cli("read", sid)
    assert code == 2 and "belongs to another session, whose hash is" in err
    assert "`s3spill ls` there lists its outputs" in err and os.sep in err
