"""`s3spill mcp-proxy` in front of two third-party MCP servers (the npm reference servers).

Every test compares the proxied answer with the upstream's direct answer to the same call:
what fits is handed on unchanged, what does not comes back as a pointer whose artifact our
read tool pages back byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from s3spill.artifacts.store import ArtifactStore
from s3spill.proxy.schemas import widened
from s3spill.store import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import EmbeddedS3, child_env, free_port
from tests.conftest import TEST_BUCKET, TEST_CONFIG
from tests.proxy.servers import (
    connect,
    proxy_command,
    read_back,
    server_command,
    source_id,
    wait_for_port,
)

SESSION = "proxy-session"
READ = "s3spill_read_artifact"
OURS = ["s3spill_read_artifact", "s3spill_grep_artifact", "s3spill_list_artifacts"]


class Target:
    """A store the proxy writes to, and the environment its process needs to reach it."""

    def __init__(self, store: ObjectStore, env: dict[str, str]) -> None:
        self.store = store
        self.env = env

    def artifact(self, sid: str) -> bytes:
        return b"".join(ArtifactStore(self.store, TEST_CONFIG, session_id=SESSION).iter_verified(sid))


@pytest.fixture(params=["local", "moto_server"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "local":
        store: ObjectStore = LocalStore(tmp_path / "store", TEST_CONFIG)
        env = child_env({})
    else:
        s3: EmbeddedS3 = request.getfixturevalue("moto_server")
        store = s3.store(TEST_BUCKET, f"proxy/{uuid.uuid4().hex}", TEST_CONFIG)
        env = child_env(s3.env())
    yield Target(store, env)
    store.close()


@pytest.fixture
def local_target(tmp_path: Path) -> Iterator[Target]:
    store = LocalStore(tmp_path / "store", TEST_CONFIG)
    yield Target(store, child_env({}))
    store.close()


def _dump(result: Any) -> dict[str, Any]:
    return dict(result.model_dump(mode="json", by_alias=True, exclude_none=True))


def _advertised(tool: dict[str, Any]) -> dict[str, Any]:
    if "outputSchema" not in tool:
        return tool
    return {**tool, "outputSchema": widened(tool["outputSchema"])}


def _big_text() -> str:
    """About 3.8 MB: numbered lines, some non-ASCII, one 200,000-character line in the middle."""
    head = "".join(f"{i:07d} ok ünïcødé ✓ value={i * 7919 % 100_003}\n" for i in range(60_000))
    tail = "".join(f"{i:07d} tail\n" for i in range(100_000))
    return head + "x" * 200_000 + "\n" + tail + "FAILED: the last line\n"


def _png(width: int, height: int, seed: int) -> bytes:
    """A valid PNG of noise (barely compressible, so its size is about width*height*3)."""
    rng = __import__("random").Random(seed)
    raw = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


def test_filesystem_multi_mb_text_is_paged_back_byte_exactly(target: Target, tmp_path: Path) -> None:
    """A 3.8 MB read_text_file result becomes a pointer plus a shrunk structuredContent (still valid
    for the tool's outputSchema); both artifacts read back equal to the upstream's direct answer."""
    root = tmp_path / "files"
    root.mkdir()
    (root / "big.txt").write_text(_big_text(), encoding="utf-8")
    upstream = server_command("filesystem", str(root))
    args = {"path": str(root / "big.txt")}

    async def run() -> None:
        async with connect(upstream, tmp_path / "direct.err") as direct:
            plain = await direct.call_tool("read_text_file", args)
        assert len(plain.content[0].text.encode()) > 3_500_000
        async with connect(proxy_command(target.store.url, SESSION, upstream), tmp_path / "proxy.err",
                           env=target.env) as proxied:
            await proxied.list_tools()  # as a harness does: the proxy learns the tool's outputSchema
            result = await proxied.call_tool("read_text_file", args)  # the SDK validates outputSchema
            assert not result.is_error
            pointer, notice = result.content[0].text, result.content[1].text
            assert len(pointer) + len(notice) < 25_000
            assert "0099999 tail" not in pointer
            text_sid, json_sid = source_id(pointer), source_id(notice)
            assert text_sid != json_sid and "replaced by markers" in notice
            assert json_sid in result.structured_content["content"]
            data, pages = await read_back(proxied, READ, text_sid)
            assert data == plain.content[0].text.encode("utf-8") and pages > 100
            stored_json, _ = await read_back(proxied, READ, json_sid)
            assert json.loads(stored_json) == plain.structured_content
            grep = await proxied.call_tool("s3spill_grep_artifact", {"source_id": text_sid,
                                                                     "pattern": "^FAILED"})
            assert "160002:\tFAILED: the last line" in grep.content[0].text

    anyio.run(run)


BIG_MCP = Path(__file__).resolve().parents[1] / "harnesses" / "big_mcp.py"


def _only_text_of(result: Any) -> str:
    [text] = [block.text for block in result.content if block.type == "text"]
    return str(text)


@pytest.mark.slow
def test_a_result_of_several_text_blocks_over_the_spool_size_is_one_pointer(local_target: Target,
                                                                            tmp_path: Path) -> None:
    """Three text blocks of 9 MB in all (a line the proxy spools and streams): the SDK client,
    validating, gets one pointer (and its resource link) whose artifact holds the blocks' texts
    one after the other."""
    env = {**local_target.env, "BIG_MCP_BYTES": "9000000", "BIG_MCP_BLOCKS": "3"}
    upstream = [sys.executable, str(BIG_MCP)]

    async def run() -> None:
        async with connect(upstream, tmp_path / "direct.err", env=env) as direct:
            plain = await direct.call_tool("dump", {})
        texts = [str(getattr(block, "text", "")) for block in plain.content]
        assert len(texts) == 3 and sum(len(t) for t in texts) == 9_000_000
        async with connect(proxy_command(local_target.store.url, SESSION, upstream), tmp_path / "proxy.err",
                           env=env) as proxied:
            result = await proxied.call_tool("dump", {})
            kinds = [block.type for block in result.content]
            assert not result.is_error and kinds == ["text", "resource_link"], kinds
            pointer = _only_text_of(result)
            assert len(pointer) < 25_000 and "row 0449999" not in pointer
            sid = source_id(pointer)
            assert local_target.artifact(sid) == "".join(texts).encode()
            page = await proxied.call_tool(READ, {"source_id": sid, "offset": 224_999, "limit": 2})
            assert "row 0224999 value=1574993" in _only_text_of(page)

    anyio.run(run)


def test_everything_passes_small_results_through_and_spills_large_ones(local_target: Target,
                                                                        tmp_path: Path) -> None:
    """tools/list is the upstream's (outputSchemas widened) plus ours; a small echo, an image,
    structured content and progress pass unchanged; concurrent multi-MB echoes each point at
    their own message."""
    upstream = server_command("everything", "stdio")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("echo", {"message": "hello"}), ("get-tiny-image", {}), ("get-sum", {"a": 2, "b": 3}),
        ("get-structured-content", {"location": "Chicago"})]

    messages = ["".join(f"{k} line {i}\n" for i in range(60_000)) for k in "abcd"]

    async def run() -> None:
        async with connect(upstream, tmp_path / "direct.err") as direct:
            tools = (await direct.list_tools()).tools
            answers = [_dump(await direct.call_tool(name, args)) for name, args in calls]
            direct_big = [(await direct.call_tool("echo", {"message": m})).content[0].text for m in messages]
        async with connect(proxy_command(local_target.store.url, SESSION, upstream),
                           tmp_path / "proxy.err", env=local_target.env) as proxied:
            listed = (await proxied.list_tools()).tools
            assert [t.name for t in listed] == [t.name for t in tools] + OURS
            # Each tool as the upstream lists it, its outputSchema widened to accept our pointer.
            assert [_dump(t) for t in listed[: len(tools)]] == [_advertised(_dump(t)) for t in tools]
            for (name, args), answer in zip(calls, answers, strict=True):
                assert _dump(await proxied.call_tool(name, args)) == answer, name

            # The blob names the second it was made, so only its shape can be compared.
            blob = await proxied.call_tool("get-resource-reference",
                                           {"resourceType": "Blob", "resourceId": 2})
            assert [b.type for b in blob.content] == ["text", "resource", "text"]
            assert str(blob.content[1].resource.uri) == "demo://resource/dynamic/blob/2"

            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            done = await proxied.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3},
                                           progress_callback=on_progress)
            assert not done.is_error and progress == [1, 2, 3]

            results: dict[int, Any] = {}

            async def echo(k: int) -> None:
                results[k] = await proxied.call_tool("echo", {"message": messages[k]})

            async with anyio.create_task_group() as tg:
                for k in range(len(messages)):
                    tg.start_soon(echo, k)
            for k in range(len(messages)):
                pointer = results[k].content[0].text
                assert len(pointer) < 25_000
                data, _ = await read_back(proxied, READ, source_id(pointer))
                assert data == direct_big[k].encode()  # the upstream's own answer, byte for byte

    anyio.run(run)


def test_filesystem_image_is_stored_on_its_own_and_errors_pass_through(local_target: Target,
                                                                       tmp_path: Path) -> None:
    """A picture over max_image_bytes is stored as its own artifact (bytes equal to the file) and
    named in the notice; a small one and an upstream error come back exactly as the upstream
    sent them."""
    root = tmp_path / "files"
    root.mkdir()
    big, small = _png(300, 300, 1), _png(8, 8, 2)
    (root / "big.png").write_bytes(big)
    (root / "small.png").write_bytes(small)
    config = tmp_path / "proxy.json"
    config.write_text(json.dumps({"max_image_bytes": 100_000, "never_spill": ["list_allowed_directories"]}))
    upstream = server_command("filesystem", str(root))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_media_file", {"path": str(root / "small.png")}),
        ("read_text_file", {"path": "/etc/passwd"}), ("list_allowed_directories", {})]

    async def run() -> None:
        async with connect(upstream, tmp_path / "direct.err") as direct:
            answers = [_dump(await direct.call_tool(name, args)) for name, args in calls]
        assert answers[1]["isError"] is True
        async with connect(proxy_command(local_target.store.url, SESSION, upstream, "--config", str(config)),
                           tmp_path / "proxy.err", env=local_target.env) as proxied:
            for (name, args), answer in zip(calls, answers, strict=True):
                assert _dump(await proxied.call_tool(name, args)) == answer, name
            result = await proxied.call_tool("read_media_file", {"path": str(root / "big.png")})
            assert not result.is_error
            assert {block.type for block in result.content} == {"text", "resource_link"}
            text = "".join(block.text for block in result.content if block.type == "text")
            assert "image #1 (image/png, 300x300" in text and "stored as source_id=" in text
            png = b"\x89PNG\r\n\x1a\n"
            image_sid = next(s for s in _all_ids(text) if local_target.artifact(s)[:8] == png)
            assert local_target.artifact(image_sid) == big
            assert "structuredContent" in text
            assert result.structured_content["content"][0]["data"].startswith("[s3spill: ")

    anyio.run(run)


def _all_ids(text: str) -> list[str]:
    return re.findall(r'source_id="([^"]+)"', text)


def test_proxy_help_lists_every_tool_it_adds() -> None:
    """`s3spill mcp-proxy --help` names the three tools it adds to the upstream's."""
    out = subprocess.run([sys.executable, "-m", "s3spill", "mcp-proxy", "--help"], capture_output=True,
                         text=True, check=True, env={**os.environ}).stdout
    for name in OURS:
        assert name in out


def test_a_streamable_http_upstream(local_target: Target, tmp_path: Path) -> None:
    """--upstream-url: server-everything over streamable HTTP behind the stdio proxy; a small echo
    is the upstream's answer, a multi-MB one a pointer paged back byte-exactly."""
    port = free_port()
    upstream = server_command("everything", "streamableHttp")
    with (tmp_path / "http.err").open("w") as err:
        server = subprocess.Popen(upstream, env={**os.environ, "PORT": str(port)}, stdin=subprocess.DEVNULL,
                                  stdout=err, stderr=err)
    try:
        wait_for_port(port, server, tmp_path / "http.err")
        url = f"http://127.0.0.1:{port}/mcp"
        command = [sys.executable, "-m", "s3spill", "--store", local_target.store.url, "--session", SESSION,
                   "mcp-proxy", "--upstream-url", url]
        message = "".join(f"http line {i}\n" for i in range(150_000))

        async def run() -> None:
            async with connect(command, tmp_path / "proxy.err", env=local_target.env) as proxied:
                names = [t.name for t in (await proxied.list_tools()).tools]
                assert "echo" in names and names[-3:] == OURS
                small = await proxied.call_tool("echo", {"message": "hi"})
                assert small.content[0].text == "Echo: hi"
                big = await proxied.call_tool("echo", {"message": message})
                pointer = big.content[0].text
                assert len(pointer) < 25_000
                data, _ = await read_back(proxied, READ, source_id(pointer))
                assert data == f"Echo: {message}".encode()

        anyio.run(run)
    finally:
        server.terminate()
        server.wait(10)


def _children(pid: int) -> list[int]:
    """Live child processes of ``pid`` (from /proc; zombies do not count)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def _issue(tokens: Path, session: str) -> str:
    argv = ["--session", session, "mcp", "--tokens", str(tokens), "--issue-token"]
    out = subprocess.run([sys.executable, "-m", "s3spill", *argv], capture_output=True, text=True, check=True,
                         env=child_env({}))
    return out.stdout.strip()


def test_http_client_side_binds_each_request_to_its_tokens_session(local_target: Target,
                                                                   tmp_path: Path) -> None:
    """--http --tokens: no token is 401; token A's client gets the upstream's tools plus ours and
    pages its pointer back byte-exactly, with progress on its own stream; token B cannot read
    A's artifact, nor use A's MCP session (404)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    tokens = tmp_path / "tokens.json"
    token_a, token_b = _issue(tokens, "http-a"), _issue(tokens, "http-b")
    port = free_port()
    upstream = server_command("everything", "stdio")
    command = [sys.executable, "-m", "s3spill", "--store", local_target.store.url, "mcp-proxy", "--http",
               f"127.0.0.1:{port}", "--tokens", str(tokens), "--", *upstream]
    url = f"http://127.0.0.1:{port}/mcp"
    # 119 KB: over the budget, paged back in 6 pages (100,000 lines took ~60 page calls over HTTP).
    message = "".join(f"a line {i}\n" for i in range(10_000))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with (tmp_path / "http-proxy.err").open("w") as err:
        proxy = subprocess.Popen(command, env=local_target.env, stdin=subprocess.DEVNULL, stdout=err,
                                 stderr=err)
    try:
        wait_for_port(port, proxy, tmp_path / "http-proxy.err")

        async def run() -> None:
            async with httpx2.AsyncClient(timeout=30) as raw:
                assert (await raw.post(url, json=init, headers=accept)).status_code == 401
                as_a = {**accept, "authorization": f"Bearer {token_a}"}
                opened = await raw.post(url, json=init, headers=as_a)
                assert opened.status_code == 200
                as_b_in_a = {**accept, "authorization": f"Bearer {token_b}",
                             "mcp-protocol-version": "2025-06-18",
                             "mcp-session-id": opened.headers["mcp-session-id"]}
                listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
                foreign = await raw.post(url, json=listing, headers=as_b_in_a)
                assert foreign.status_code == 404
                ended = await raw.delete(url, headers={**as_a, "mcp-protocol-version": "2025-06-18",
                                                       "mcp-session-id": opened.headers["mcp-session-id"]})
                assert ended.status_code == 200
            async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token_a}"},
                                          timeout=60) as http_a, \
                    Client(streamable_http_client(url, http_client=http_a)) as client_a:
                names = [t.name for t in (await client_a.list_tools()).tools]
                assert "echo" in names and names[-3:] == OURS
                progress: list[float] = []

                async def on_progress(value: float, total: float | None, text: str | None) -> None:
                    progress.append(value)

                await client_a.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 2},
                                         progress_callback=on_progress)
                assert progress == [1, 2]
                pointer = (await client_a.call_tool("echo", {"message": message})).content[0].text
                sid = source_id(pointer)
                data, pages = await read_back(client_a, READ, sid)
                assert data == f"Echo: {message}".encode() and pages > 1
            async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token_b}"},
                                          timeout=60) as http_b, \
                    Client(streamable_http_client(url, http_client=http_b)) as client_b:
                refused = await client_b.call_tool(READ, {"source_id": sid})
                assert refused.is_error and refused.content[0].text.startswith("SourceIdError: ")
            # Each client ended its session (DELETE): no upstream is left running for it.
            deadline = time.monotonic() + 20
            while _children(proxy.pid) and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            assert _children(proxy.pid) == []

        anyio.run(run)
    finally:
        proxy.terminate()
        proxy.wait(20)


def _proxy_cli(tmp_path: Path, *argv: str,
               stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "s3spill", "--store", (tmp_path / "s").as_uri(), "--session",
                           SESSION, "mcp-proxy", *argv], stdin=stdin, capture_output=True, timeout=60,
                          env=child_env({}), check=False)


def test_the_command_line_refuses_clearly_and_follows_the_upstream(tmp_path: Path) -> None:
    """No upstream, or one that cannot start: one line, exit 2; an upstream that exits 3 makes
    the proxy say so in one line and exit 3; with stdin a regular file the handshake is still
    answered."""
    none = _proxy_cli(tmp_path)
    assert none.returncode == 2 and b"needs one upstream" in none.stderr
    missing = _proxy_cli(tmp_path, "--", str(tmp_path / "no-such-server"))
    assert missing.returncode == 2 and b"cannot start the upstream server" in missing.stderr
    # The client stays connected (stdin open): the upstream is the one that ends.
    exits = subprocess.Popen([sys.executable, "-m", "s3spill", "--store", (tmp_path / "s").as_uri(),
                              "--session", SESSION, "mcp-proxy", "--", "sh", "-c", "exit 3"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=child_env({}))
    assert exits.wait(60) == 3
    assert exits.stderr is not None and exits.stderr.read().decode().splitlines()[-1] == (
        "s3spill mcp-proxy: the upstream server ended (exit status 3)")
    exits.stdin.close()  # type: ignore[union-attr]
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(init) + "\n")
    with requests.open("rb") as stdin:
        answered = _proxy_cli(tmp_path, "--", *server_command("everything", "stdio"), stdin=stdin)
    assert answered.returncode == 0
    assert json.loads(answered.stdout.splitlines()[0])["result"]["capabilities"]["tools"]


def test_a_request_from_the_server_to_the_client_round_trips(local_target: Target, tmp_path: Path) -> None:
    """server-everything asks the client for an LLM sample in the middle of a tool call; through
    the proxy the request reaches the client's sampling callback and its answer gets back."""
    import mcp_types as types

    asked: list[str] = []

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        asked.append(getattr(content, "text", ""))
        return types.CreateMessageResult(role="assistant", model="scripted",
                                         content=types.TextContent(type="text", text="sampled: yes"))

    upstream = server_command("everything", "stdio")

    async def run() -> None:
        async with connect(proxy_command(local_target.store.url, SESSION, upstream), tmp_path / "proxy.err",
                           env=local_target.env, sampling_callback=sample) as proxied:
            result = await proxied.call_tool("trigger-sampling-request", {"prompt": "is this relayed?"})
            assert not result.is_error
            assert "sampled: yes" in json.dumps(_dump(result))
        assert any("is this relayed?" in text for text in asked)

    anyio.run(run)
