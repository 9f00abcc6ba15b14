"""Every tool of server-everything and mcp-server-git, through the proxy, with the official
Python and TypeScript clients (validation on): the same outcome as direct, except that what
is over the budget comes back as a pointer."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.proxy.conftest import SESSION
from tests.proxy.servers import connect, proxy_command, server_command, source_id, ts_client

BIG_MESSAGE = "".join(f"line {i} of a large echo\n" for i in range(60_000))
#: Every tool server-everything lists to a client without sampling or elicitation, but
#: ``simulate-research-query`` (task-based execution only: outside what the proxy spills).
EVERYTHING_CALLS: list[dict[str, Any]] = [
    {"name": "echo", "arguments": {"message": "hello"}},
    {"name": "echo", "arguments": {"message": BIG_MESSAGE}},
    {"name": "get-annotated-message", "arguments": {"messageType": "success", "includeImage": True}},
    {"name": "get-env", "arguments": {}},
    {"name": "get-resource-links", "arguments": {"count": 3}},
    {"name": "get-resource-reference", "arguments": {"resourceType": "Text", "resourceId": 1}},
    {"name": "get-structured-content", "arguments": {"location": "Chicago"}},
    {"name": "get-sum", "arguments": {"a": 2, "b": 3}},
    {"name": "get-tiny-image", "arguments": {}},
    {"name": "gzip-file-as-resource", "arguments": {
        "name": "t.gz", "outputType": "resource",
        "data": "data:text/plain;base64," + base64.b64encode(b"hello gzip").decode()}},
    {"name": "toggle-simulated-logging", "arguments": {}},
    {"name": "toggle-simulated-logging", "arguments": {}},
    {"name": "toggle-subscriber-updates", "arguments": {}},
    {"name": "toggle-subscriber-updates", "arguments": {}},
    {"name": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 2}},
]
#: Results that differ from run to run (the environment, a timestamp in a resource).
UNSTABLE = {"get-env", "gzip-file-as-resource", "get-resource-reference"}
EVERYTHING_BIG = {1}


def _git_repo(root: Path) -> Path:
    """A repository with one commit, a branch, and a large unstaged change (a 3 MB diff)."""
    repo = root / "repo"
    repo.mkdir(parents=True)

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    (repo / "big.txt").write_text("".join(f"{i} old\n" for i in range(150_000)))
    (repo / "small.txt").write_text("small\n")
    git("add", ".")
    git("commit", "-qm", "first")
    (repo / "big.txt").write_text("".join(f"{i} new\n" for i in range(150_000)))
    return repo


def _git_calls(repo: Path) -> list[dict[str, Any]]:
    r = str(repo)
    return [
        {"name": "git_status", "arguments": {"repo_path": r}},
        {"name": "git_diff_unstaged", "arguments": {"repo_path": r}},
        {"name": "git_diff_staged", "arguments": {"repo_path": r}},
        {"name": "git_diff", "arguments": {"repo_path": r, "target": "HEAD"}},
        {"name": "git_log", "arguments": {"repo_path": r}},
        {"name": "git_show", "arguments": {"repo_path": r, "revision": "HEAD"}},
        {"name": "git_branch", "arguments": {"repo_path": r, "branch_type": "local"}},
        {"name": "git_create_branch", "arguments": {"repo_path": r, "branch_name": "side"}},
        {"name": "git_checkout", "arguments": {"repo_path": r, "branch_name": "side"}},
        {"name": "git_add", "arguments": {"repo_path": r, "files": ["small.txt"]}},
        {"name": "git_reset", "arguments": {"repo_path": r}},
        {"name": "git_commit", "arguments": {"repo_path": r, "message": "nothing staged"}},
    ]


GIT_BIG = {1, 3}


def _git_server(repo: Path) -> list[str]:
    found = shutil.which("mcp-server-git", path=str(Path(__import__("sys").executable).parent))
    if found is None:
        pytest.fail("mcp-server-git is not installed: pip install -e '.[dev]' (it is a dev dependency)")
    return [found, "--repository", str(repo)]


def _python_calls(command: list[str], calls: list[dict[str, Any]], errlog: Path) -> list[Any]:
    async def run() -> list[Any]:
        async with connect(command, errlog) as client:
            await client.list_tools()
            return [await client.call_tool(c["name"], c["arguments"]) for c in calls]

    return anyio.run(run)


def _same_or_pointer(calls: list[dict[str, Any]], plain: list[Any], proxied: list[Any],
                     big: set[int]) -> None:
    for k, (one, other) in enumerate(zip(plain, proxied, strict=True)):
        name = calls[k]["name"]
        assert other["isError"] == one["isError"], name
        if k in big:
            text = "".join(b.get("text", "") for b in other["content"])
            assert len(text) < 25_000 and source_id(text), name
        elif name not in UNSTABLE:
            assert other == one, name


def _dump(result: Any) -> dict[str, Any]:
    out = dict(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    out.setdefault("isError", False)
    return out


def _ts_results(run: dict[str, Any]) -> list[dict[str, Any]]:
    assert [(c["name"], c["ok"], c.get("error")) for c in run["calls"]] == \
        [(c["name"], True, None) for c in run["calls"]]
    return [{**c["result"], "isError": c["result"].get("isError", False)} for c in run["calls"]]


def test_every_everything_tool_with_both_clients(tmp_path: Path) -> None:
    """server-everything: each call succeeds through the proxy for the Python and the TypeScript
    client as it does direct; the 1.6 MB echo is a pointer, the rest unchanged."""
    upstream = server_command("everything", "stdio")
    proxied = proxy_command((tmp_path / "store").as_uri(), SESSION, upstream)
    plain_py = [_dump(r) for r in _python_calls(upstream, EVERYTHING_CALLS, tmp_path / "direct.err")]
    via_py = [_dump(r) for r in _python_calls(proxied, EVERYTHING_CALLS, tmp_path / "proxy.err")]
    _same_or_pointer(EVERYTHING_CALLS, plain_py, via_py, EVERYTHING_BIG)
    plain_ts = _ts_results(ts_client(upstream, EVERYTHING_CALLS, tmp_path))
    via_ts = _ts_results(ts_client(proxied, EVERYTHING_CALLS, tmp_path))
    _same_or_pointer(EVERYTHING_CALLS, plain_ts, via_ts, EVERYTHING_BIG)


def test_every_git_tool_with_both_clients(tmp_path: Path) -> None:
    """mcp-server-git (the Python reference server): each call has the same outcome through the
    proxy as direct, for both clients; the 3 MB diffs are pointers."""
    outcomes = []
    for client in ("python", "typescript"):
        runs = []
        for how in ("direct", "proxied"):
            repo = _git_repo(tmp_path / f"{client}-{how}")
            upstream = _git_server(repo)
            command = upstream if how == "direct" else proxy_command(
                (tmp_path / "store").as_uri(), SESSION, upstream)
            calls = _git_calls(repo)
            if client == "python":
                runs.append([_dump(r) for r in _python_calls(command, calls, tmp_path / f"{how}.err")])
            else:
                runs.append(_ts_results(ts_client(command, calls, tmp_path)))
        plain, via = runs
        assert [r["isError"] for r in plain].count(True) <= 1  # committing with nothing staged may fail
        for k in range(len(plain)):
            assert via[k]["isError"] == plain[k]["isError"], (client, k)
            if k in GIT_BIG:
                assert len(via[k]["content"][0]["text"]) < 25_000 and source_id(via[k]["content"][0]["text"])
        outcomes.append([r["isError"] for r in via])
    assert outcomes[0] == outcomes[1]
