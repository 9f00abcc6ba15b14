"""A command that only reads never creates a store: a mistyped file:// path is named as missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import CliCall
from tests.conftest import Refuse


@pytest.fixture
def no_serving(refuse: Refuse) -> None:
    """The servers' loops (ui, mcp) fail the test instead of serving: the store is opened first."""
    import uvicorn

    from s3spill.agent.mcp import server as mcp_server
    from s3spill.agent.mcp import sessions as mcp_sessions

    refuse("served", (uvicorn, "run"), (mcp_server, "serve_stdio"), (mcp_server, "serve_http"),
           (mcp_sessions, "serve_http_tokens"))


SID = "artifact:" + "0" * 32 + ":20260101T000000Z-000000000000-bash:0123456789abcdef"


@pytest.mark.parametrize("argv", [
    ["read", SID], ["grep", SID, "x"], ["ls"], ["journal", "show"], ["ref", "list"],
    ["gc", "plan", "--all"], ["status", "live:" + "0" * 32 + ":20260101T000000Z-000000000000-sh"],
    ["ui"], ["stats"], ["stats", "--prefix", "tenant-a"], ["usage", "compact"],
    ["mcp", "--no-externalize"], ["mcp", "--no-externalize", "--http", "127.0.0.1:8799"],
], ids=lambda a: " ".join(a[:3]))
def test_a_mistyped_store_path_creates_nothing(argv: list[str], cli: CliCall, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch, no_serving: None) -> None:
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


def test_the_multi_session_mcp_server_refuses_a_mistyped_store(cli: CliCall, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              no_serving: None) -> None:
    """`mcp --http --tokens --no-externalize` opens its store as a reader: a missing one is refused."""
    tokens = str(tmp_path / "tokens.json")
    assert cli("--session", "s", "mcp", "--tokens", tokens, "--issue-token")[0] == 0
    typo = tmp_path / "stroe"
    code, _, err = cli("--store", typo.as_uri(), "mcp", "--no-externalize", "--http", "127.0.0.1:8799",
                       "--tokens", tokens)
    assert code == 2 and err.startswith("s3spill: StoreNotFound: "), err
    assert not typo.exists()


def test_mcp_that_externalizes_makes_its_store(cli: CliCall, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`mcp` with externalize is a writer: a harness starts it before the first spill, so it
    makes a missing store, as `run` and the hooks do."""
    from s3spill.agent.mcp import server as mcp_server

    monkeypatch.setenv("S3SPILL_SESSION", "s")
    monkeypatch.setattr(mcp_server, "serve_stdio", lambda server: None)
    code, _, err = cli("--store", (tmp_path / "fresh").as_uri(), "mcp")
    assert code == 0, err
    assert (tmp_path / "fresh" / "objects").is_dir()
