"""Every tool of server-everything and mcp-server-git, through the proxy, with the official
Python and TypeScript clients (validation on): the same outcome as direct, except that what
is over the budget comes back as a pointer."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from pydantic import ValidationError

from s3spill.artifacts.paging import unrender
from tests.proxy.conftest import SESSION
from tests.proxy.servers import (
    OURS,
    connect,
    proxy_command,
    py_tasks_client,
    read_back,
    server_command,
    source_id,
    ts_client,
)

BIG_MESSAGE = "".join(f"line {i} of a large echo\n" for i in range(60_000))
#: Every tool server-everything lists to a client without sampling or elicitation, but
#: ``simulate-research-query`` (task-based execution only: TASK_CALLS).
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
#: The tools server-everything lists only to a client that declares sampling, elicitation (form
#: and url) and roots, each answered by the client through the proxy; the big sampling answer
#: makes a 1.6 MB result. ``simulate-research-query`` and the two ``*-async`` tools (listed only
#: to a client that runs sampling/elicitation as tasks) are in TASK_CALLS.
CAPABLE_CALLS: list[dict[str, Any]] = [
    {"name": "trigger-sampling-request", "arguments": {"prompt": "small", "maxTokens": 50}},
    {"name": "trigger-sampling-request", "arguments": {"prompt": "big"}},
    {"name": "trigger-elicitation-request", "arguments": {}},
    {"name": "trigger-url-elicitation", "arguments": {"url": "https://example.invalid/consent"}},
    {"name": "get-roots-list", "arguments": {}},
]
CAPABLE_BIG = {1}
ANSWERS: dict[str, Any] = {
    "sampling": {"small": "a short answer", "big": BIG_MESSAGE},
    "elicitation": {"name": "Ada", "check": True, "integer": 7},
    "roots": [{"uri": "file:///work/project", "name": "project"}],
}


#: The tools that need tasks (2025-11-25): ``simulate-research-query`` runs as a task on the
#: server (tools/call with ``task``, tasks/get, tasks/result; the ambiguous one asks the client
#: to elicit while its tasks/result is pending), the ``*-async`` tools ask the client to run
#: sampling/elicitation as a task it then polls by tasks/get and reads by tasks/result. The big
#: topic makes a 158 KB tasks/result (the topic twice), the big sampling answer a 160 KB result
#: (big enough to be spilled, small enough to page back in a few calls).
BIG_TOPIC = "".join(f"topic line {i}\n" for i in range(5_000))
BIG_ANSWER = "".join(f"line {i} of a big answer\n" for i in range(6_000))
TASK_CALLS: list[dict[str, Any]] = [
    {"name": "simulate-research-query", "arguments": {"topic": "python", "ambiguous": True}, "task": True},
    {"name": "simulate-research-query", "arguments": {"topic": BIG_TOPIC}, "task": True},
    {"name": "trigger-sampling-request-async", "arguments": {"prompt": "small"}},
    {"name": "trigger-sampling-request-async", "arguments": {"prompt": "big"}},
    {"name": "trigger-elicitation-request-async", "arguments": {}},
]
TASK_BIG = {1, 3}
TASK_ANSWERS: dict[str, Any] = {**ANSWERS, "sampling": {"small": "a short answer", "big": BIG_ANSWER},
                                "elicitation": {"name": "Ada", "favoriteColor": "Blue", "agreeToTerms": True,
                                                "interpretation": "technical"}}
#: Task ids are fresh in every run (the TypeScript SDK's 32 hex digits, the Python SDK's UUIDs).
TASK_ID = re.compile(r"\b(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")


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
            assert len(_text(other)) < 25_000 and source_id(_text(other)), name
        elif name in UNSTABLE:
            pass
        elif name == "trigger-url-elicitation":  # a fresh elicitation id per call
            assert _text(other).split("Elicitation ID")[0] == _text(one).split("Elicitation ID")[0]
        else:
            assert other == one, name


def _text(result: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in result["content"])


def _asked(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The server's requests as the client got them, each once, sorted (``roots/list`` comes
    when the server gets to it, and again if its cache was empty) and without the fresh
    elicitation ids; two sampling, two elicitation and the roots request, or the test fails."""
    out = sorted({json.dumps({**r, "params": {k: v for k, v in r["params"].items() if k != "elicitationId"}},
                             sort_keys=True) for r in requests if r["method"] != "roots/list"})
    assert len(out) == 4 and "roots/list" in {r["method"] for r in requests}, requests
    return [json.loads(r) for r in out]


def _capable_python(command: list[str], errlog: Path,
                    ) -> tuple[set[str], list[dict[str, Any]], list[dict[str, Any]], bytes]:
    """A Python client with sampling, elicitation and roots callbacks: (tools listed, results,
    the server's requests as the callbacks got them, the big result read back if a pointer)."""
    requests: list[dict[str, Any]] = []

    def got(method: str, params: Any) -> None:
        requests.append({"method": method, "params": params.model_dump(
            mode="json", by_alias=True, exclude_none=True) if params is not None else {}})

    async def sampling(_: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        got("sampling/createMessage", params)
        content = params.messages[0].content
        prompt = content.text.split("context: ")[-1] if isinstance(content, types.TextContent) else ""
        return types.CreateMessageResult(role="assistant", model="s3spill-test", content=types.TextContent(
            type="text", text=ANSWERS["sampling"][prompt]))

    async def elicitation(_: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        got("elicitation/create", params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content=ANSWERS["elicitation"])

    async def roots(_: Any) -> types.ListRootsResult:
        got("roots/list", None)
        return types.ListRootsResult.model_validate({"roots": ANSWERS["roots"]})

    async def run() -> tuple[set[str], list[dict[str, Any]], list[dict[str, Any]], bytes]:
        async with connect(command, errlog, sampling_callback=sampling, elicitation_callback=elicitation,
                           list_roots_callback=roots, read_timeout_seconds=30) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            results = [_dump(await client.call_tool(c["name"], c["arguments"])) for c in CAPABLE_CALLS]
            stored = b""
            if OURS[0] in tools:
                stored, _ = await read_back(client, OURS[0], source_id(_text(results[1])))
            return tools, results, requests, stored

    return anyio.run(run)


def _task_requests(requests: list[dict[str, Any]]) -> list[str]:
    """The server's sampling and elicitation requests (with or without ``task``, naming a task
    in ``_meta`` or not) as the client got them, sorted, task ids left out."""
    return sorted(TASK_ID.sub("ID", json.dumps(r, sort_keys=True))
                  for r in requests if r["method"] != "roots/list")


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


def test_the_python_sdk_2_cannot_call_a_tool_as_a_task(tmp_path: Path) -> None:
    """Why the task tools are called with mcp 1.30: with the venv's 2.x, direct to the server,
    ``ClientSession.send_request`` checks the answer to a tools/call made as a task against the
    2025-11-25 CallToolResult surface and refuses the CreateTaskResult (``content`` missing),
    and ``call_tool`` gets the server's own error (when a 2.x learns tasks, this fails)."""

    async def run() -> None:
        async with connect(server_command("everything", "stdio"), tmp_path / "direct.err") as client:
            await client.list_tools()
            request = types.CallToolRequest(params=types.CallToolRequestParams(
                name="simulate-research-query", arguments={"topic": "x"},
                task=types.TaskMetadata(ttl=60_000)))
            with pytest.raises(ValidationError, match="content"):
                await client.session.send_request(request, types.CreateTaskResult)
            plain = await client.call_tool("simulate-research-query", {"topic": "x"})
            assert plain.is_error and "requires task augmentation" in _text(_dump(plain))

    anyio.run(run)


def test_capability_tools_with_the_python_client(tmp_path: Path) -> None:
    """server-everything's tools for a client with sampling, elicitation and roots: the proxy
    relays the server's requests to the Python client and its answers back, each call ends as
    direct, and the result made of the 1.6 MB sampling answer is a pointer to all of it."""
    upstream = server_command("everything", "stdio")
    proxied = proxy_command((tmp_path / "store").as_uri(), SESSION, upstream)
    tools, plain, asked, _ = _capable_python(upstream, tmp_path / "direct.err")
    via_tools, via, via_asked, stored = _capable_python(proxied, tmp_path / "proxy.err")
    plain_names = {c["name"] for c in EVERYTHING_CALLS} | {"simulate-research-query"}
    assert tools - plain_names == {c["name"] for c in CAPABLE_CALLS}
    assert via_tools == tools | set(OURS)
    assert _asked(via_asked) == _asked(asked)
    assert not any(r["isError"] for r in plain), plain
    _same_or_pointer(CAPABLE_CALLS, plain, via, CAPABLE_BIG)
    assert "Name: Ada" in _text(via[2]) and "project" in _text(via[4])
    assert b"line 0 of a large echo" in stored and b"line 59999 of a large echo" in stored


def test_capability_tools_with_the_typescript_client(tmp_path: Path) -> None:
    """The same with the TypeScript SDK client answering the server's requests (it validates
    each request it gets and each answer it gives, and every result)."""
    upstream = server_command("everything", "stdio")
    proxied = proxy_command((tmp_path / "store").as_uri(), SESSION, upstream)
    direct = ts_client(upstream, CAPABLE_CALLS, tmp_path, answers=ANSWERS)
    via = ts_client(proxied, CAPABLE_CALLS, tmp_path, answers=ANSWERS)
    assert {t["name"] for t in via["tools"]} == {t["name"] for t in direct["tools"]} | set(OURS)
    assert _asked(via["requests"]) == _asked(direct["requests"])
    _same_or_pointer(CAPABLE_CALLS, _ts_results(direct), _ts_results(via), CAPABLE_BIG)


@pytest.mark.slow
def test_task_tools_with_both_clients(tmp_path: Path) -> None:
    """The three task tools with the tasks APIs of the TypeScript SDK (experimental, 1.32.2) and
    of the Python SDK (``mcp`` 1.30.0, the last with one): a client task store, tools/call as a
    task. Direct and through the proxy, all four at once (each waits out the server's 1 s
    stages and polls): every call completes as direct, the server's task requests to the client
    and its tasks/get and tasks/result reach the client and come back, each client validates
    the results; the big tasks/result and the big async result come back as pointers whose
    pages, read by that client, hold the direct result's text."""
    upstream = server_command("everything", "stdio")
    runs: dict[tuple[str, str], Any] = {}
    with ThreadPoolExecutor(4) as pool:
        for client, run in (("typescript", partial(ts_client, tasks=True, parallel=True)),
                            ("python", py_tasks_client)):
            proxied = proxy_command((tmp_path / client / "store").as_uri(), SESSION, upstream)
            for how, command in (("direct", upstream), ("proxied", proxied)):
                (tmp_path / client / how).mkdir(parents=True)
                runs[client, how] = pool.submit(run, command, TASK_CALLS, tmp_path / client / how,
                                                answers=TASK_ANSWERS, read_back=True)
        done = {key: run.result() for key, run in runs.items()}
    assert done["python", "direct"]["sdk"] == "1.30.0"
    for client in ("typescript", "python"):
        _same_tasks(done[client, "direct"], done[client, "proxied"])


def _same_tasks(direct: dict[str, Any], via: dict[str, Any]) -> None:
    listed = {t["name"] for t in direct["tools"]}
    assert {c["name"] for c in TASK_CALLS} <= listed
    assert {t["name"] for t in via["tools"]} == listed | set(OURS)
    asked = _task_requests(direct["requests"])
    assert _task_requests(via["requests"]) == asked and len(asked) == 4
    plain, proxied_results = _ts_results(direct), _ts_results(via)
    for k, (one, other) in enumerate(zip(plain, proxied_results, strict=True)):
        name = TASK_CALLS[k]["name"]
        expected = TASK_ID.sub("ID", _text(one))
        if "task" in TASK_CALLS[k]:  # the statuses polled depend on timing; how each ends does not
            assert via["calls"][k]["task"]["statuses"][-1] == direct["calls"][k]["task"]["statuses"][-1]
        if k in TASK_BIG:
            assert len(_text(other)) < 25_000 and source_id(_text(other)), name
            stored = b"".join(unrender(page) for page in via["calls"][k]["pages"])
            assert TASK_ID.sub("ID", stored.decode()) == expected and len(stored) > 100_000, name
        else:
            assert "pages" not in via["calls"][k] and TASK_ID.sub("ID", _text(other)) == expected, name
    assert "Research Report: python (technical)" in _text(proxied_results[0])
    assert "[COMPLETED]" in _text(proxied_results[2]) and "Name: Ada" in _text(proxied_results[4])


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
