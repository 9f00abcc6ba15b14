"""A command that only reads never creates a store: a mistyped file:// path is named as missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import CliCall

SID = "artifact:" + "0" * 32 + ":20260101T000000Z-000000000000-bash:0123456789abcdef"


@pytest.mark.parametrize("argv", [
    ["read", SID], ["grep", SID, "x"], ["ls"], ["journal", "show"], ["ref", "list"],
    ["gc", "plan", "--all"], ["status", "live:" + "0" * 32 + ":20260101T000000Z-000000000000-sh"],
], ids=lambda a: " ".join(a[:2]))
def test_a_mistyped_store_path_creates_nothing(argv: list[str], cli: CliCall, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """No directory appears at the mistyped path; the line says the store does not exist
    (not that the source id is unknown) and exits 2."""
    monkeypatch.setenv("S3SPILL_SESSION", "s")
    typo = tmp_path / "stroe" / "deeper"
    code, out, err = cli("--store", typo.as_uri(), *argv)
    assert code == 2 and out == "", err
    assert err == (f"s3spill: StoreNotFound: no store at {typo}: the directory does not exist "
                   "(check --store / $S3SPILL_STORE; nothing was created, and the first spill or "
                   "run creates a store)\n")
    assert not (tmp_path / "stroe").exists()


def test_the_first_spill_still_creates_the_store(cli: CliCall, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing commands create a fresh store as before, and a read then finds it."""
    monkeypatch.setenv("S3SPILL_SESSION", "s")
    store = (tmp_path / "new" / "store").as_uri()
    (tmp_path / "out.txt").write_text("hi\n")
    code, out, err = cli("--store", store, "spill", str(tmp_path / "out.txt"))
    assert code == 0, err
    assert cli("--store", store, "read", out.splitlines()[0])[0] == 0
