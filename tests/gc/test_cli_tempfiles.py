"""`s3spill gc` leaves no plan file in the temporary directory that nobody asked to keep."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from s3spill.cli import main
from s3spill.store.local import LocalStore


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "tmpdir"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def _gc(store: LocalStore, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["--store", store.url, "gc", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_run_removes_its_temporary_plan(local_store: LocalStore, private_tmp: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """`gc run` without --out says where its plan was and removes it when the run ends."""
    code, doc = _gc(local_store, capsys, "run", "--all")
    plan = doc["plan"]
    assert code == 0 and isinstance(plan, dict) and plan["plan_kept"] is False
    assert Path(str(plan["plan_path"])).parent == private_tmp and list(private_tmp.iterdir()) == []


def test_plan_alone_names_the_file_as_the_users(local_store: LocalStore, private_tmp: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`gc plan` without --out keeps the file (it is meant for `gc apply`) and says it is yours to delete."""
    code, doc = _gc(local_store, capsys, "plan", "--all")
    path = Path(str(doc["plan_path"]))
    assert code == 0 and path.exists() and path.parent == private_tmp
    assert "yours to delete" in str(doc["note"]) and doc["apply_with"] == \
        f"s3spill --store {local_store.url} gc apply {path}"


def test_a_stored_plan_leaves_no_local_copies(local_store: LocalStore, private_tmp: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """--out store uploads the plan; neither planning nor applying it by id leaves a local file."""
    code, doc = _gc(local_store, capsys, "plan", "--all", "--out", "store")
    assert code == 0 and doc["plan_path"] is None and list(private_tmp.iterdir()) == []
    code, _ = _gc(local_store, capsys, "apply", str(doc["apply_with"]).split()[-1], "--dry-run")
    assert code == 0 and list(private_tmp.iterdir()) == []
