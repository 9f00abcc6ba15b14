"""`s3spill ls`: a session's stored outputs, running commands and leases, as text and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from s3spill.store.local import LocalStore
from tests.cli.conftest import CliCall


def _spill(cli: CliCall, tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    code, out, err = cli("spill", str(path), "--label", name)
    assert code == 0, err
    return out.splitlines()[0]


def test_ls_lists_outputs_running_commands_and_leases(cli: CliCall, local: LocalStore, tmp_path: Path,
                                                      reaper: dict[str, str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two stored outputs (one under a lease) and one background command: ls names each,
    says which session it lists and where that came from, and --json holds the same."""
    for name, value in reaper.items():  # the background run's supervisor inherits it from here
        monkeypatch.setenv(name, value)
    kept = _spill(cli, tmp_path, "kept.txt", "one\ntwo\n")
    other = _spill(cli, tmp_path, "other.txt", "three\n")
    assert cli("ref", "publish", kept)[0] == 0
    code, out, err = cli("run", "--background", "--", "sleep", "60")
    assert code == 0, err
    live = out.splitlines()[0]
    try:
        code, out, err = cli("ls")
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0] == f"session s (from $S3SPILL_SESSION), store {local.url}"
        assert "stored outputs: 2, newest first" in lines and "running commands: 1" in lines
        assert "leases: 1" in lines
        assert out.index(other) < out.index(kept)  # newest first
        assert any(line.startswith(f"  {live}  running") for line in lines)
        assert any(kept in line and "COMMITTED" in line for line in lines[lines.index("leases: 1"):])
        code, out, _ = cli("ls", "--json")
        doc = json.loads(out)
        assert code == 0 and doc["session"] == "s" and doc["session_from"] == "$S3SPILL_SESSION"
        assert [a["source_id"] for a in doc["artifacts"]] == [other, kept]
        assert [r["source_id"] for r in doc["running"]] == [live]
        assert [(x["source_id"], x["state"]) for x in doc["leases"]] == [(kept, "COMMITTED")]
    finally:
        assert cli("stop", live, "--wait", "30")[0] == 0


def test_ls_of_an_empty_session_says_so(cli: CliCall, local: LocalStore) -> None:
    """A session with nothing yet lists nothing, in words, and exits 0."""
    code, out, _ = cli("ls")
    assert code == 0 and out.splitlines()[1:] == ["stored outputs: none", "running commands: none",
                                                  "leases: none"]


def test_ls_limit_over_the_cap_is_one_line(cli: CliCall, local: LocalStore) -> None:
    """--limit past 100 is refused in the CLI's one voice."""
    code, _, err = cli("ls", "--limit", "101")
    assert code == 2 and err.startswith("s3spill: InvalidRequest: --limit 101 is over 100 (")
