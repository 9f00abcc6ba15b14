"""The third-party MCP servers the proxy is tested against, and clients for both paths.

The servers are the reference servers from npm, pinned in tests/mcp_servers/package.json
and installed by ``.ci/run`` (``npm ci --prefix tests/mcp_servers``). A missing install is a
failure that says how to fix it, never a skip: a proxy test that did not run proved nothing.
"""

from __future__ import annotations

import asyncio
import json
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from s3spill.agent.tools import AgentTools
from s3spill.artifacts.paging import unrender
from s3spill.proxy.relay import Relay
from s3spill.proxy.results import ResultSpiller
from s3spill.proxy.settings import ProxySettings
from s3spill.spill.json_spool import Spool
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore
from s3spill.testing import child_env

SERVERS = Path(__file__).resolve().parents[1] / "mcp_servers"
ENTRY = {
    "everything": SERVERS / "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    "filesystem": SERVERS / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    "memory": SERVERS / "node_modules/@modelcontextprotocol/server-memory/dist/index.js",
}
#: The official TypeScript SDK client, driven by a JSON plan (tests/mcp_servers/ts_client.mjs).
TS_CLIENT = SERVERS / "ts_client.mjs"
#: The Python SDK client with tasks (``mcp`` 1.30.0, in a directory of its own: the venv's 2.x
#: has none), driven by the same plans (tests/mcp_servers/py_tasks_client.py).
PY_TASKS_CLIENT = SERVERS / "py_tasks_client.py"
PY_SDK_1 = SERVERS / "python-sdk-1"
SID = re.compile(r'source_id="([^"]+)"')
RELAY_SESSION = "relay-session"
OURS = ["s3spill_read_artifact", "s3spill_grep_artifact", "s3spill_list_artifacts"]
INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


def server_command(name: str, *args: str) -> list[str]:
    """The command line of a pinned third-party server (fails loudly when not installed)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: the proxy tests run the reference MCP servers from npm")
    entry = ENTRY[name]
    if not entry.is_file():
        pytest.fail(f"{entry} is missing: run `npm ci --prefix tests/mcp_servers` (.ci/run does)")
    return [node, str(entry), *args]


def ts_client(command: list[str], calls: list[dict[str, Any]], workdir: Path,
              env: dict[str, str] | None = None, answers: dict[str, Any] | None = None,
              **options: bool) -> dict[str, Any]:
    """Run the TypeScript SDK client against ``command``: {"tools": [...], "calls": [{name, ok,
    result | error}], "requests": [...]} (its validation of structuredContent is on, as the SDK
    ships it); with ``answers``, a client with sampling, elicitation and roots; ``options`` are
    ``tasks``, ``read_back`` and ``parallel`` (ts_client.mjs says what each does)."""
    node = server_command("everything")[0]
    plan = workdir / f"ts-plan-{len(list(workdir.glob('ts-plan-*')))}.json"
    plan.write_text(json.dumps({"command": command, "calls": calls, "env": env or {},
                                "answers": answers, **options}))
    with (workdir / "ts-client.err").open("ab") as err:
        done = subprocess.run([node, str(TS_CLIENT), str(plan)], stdout=subprocess.PIPE, stderr=err,
                              timeout=300, check=False, env=child_env(env or {}))
    assert done.returncode == 0, (workdir / "ts-client.err").read_text(errors="replace")[-3000:]
    return dict(json.loads(done.stdout))


def py_tasks_client(command: list[str], calls: list[dict[str, Any]], workdir: Path,
                    answers: dict[str, Any], read_back: bool = False) -> dict[str, Any]:
    """Run the Python SDK 1.30 client with tasks against ``command``, as :func:`ts_client` runs
    the TypeScript one: {"sdk", "tools", "calls", "requests"}."""
    if not (PY_SDK_1 / "mcp").is_dir():
        pytest.fail(f"{PY_SDK_1} is missing: run `{sys.executable} -m pip install --no-deps --target "
                    f"{PY_SDK_1} -r {SERVERS}/python-sdk-1.txt` (.ci/run does)")
    plan = workdir / "py-plan.json"
    # The server it starts gets the suite's environment: this s3spill, the venv's mcp 2.x.
    plan.write_text(json.dumps({"command": command, "calls": calls, "answers": answers,
                                "read_back": read_back, "env": child_env({})}))
    with (workdir / "py-client.err").open("ab") as err:
        done = subprocess.run([sys.executable, str(PY_TASKS_CLIENT), str(plan)], stdout=subprocess.PIPE,
                              stderr=err, timeout=300, check=False,
                              env=child_env({"PYTHONPATH": str(PY_SDK_1)}))
    assert done.returncode == 0, (workdir / "py-client.err").read_text(errors="replace")[-3000:]
    return dict(json.loads(done.stdout))


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    """Until something listens on 127.0.0.1:``port`` (fails if ``proc`` exits first)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)


def proxy_command(store_url: str, session: str, upstream: list[str], *flags: str) -> list[str]:
    return [sys.executable, "-m", "s3spill", "--store", store_url, "--session", session, "mcp-proxy",
            *flags, "--", *upstream]


@asynccontextmanager
async def connect(command: list[str], errlog: Path, env: dict[str, str] | None = None,
                  **client_options: Any) -> AsyncIterator[Client]:
    """An SDK client over stdio to ``command`` (the server's stderr goes to ``errlog``)."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    with errlog.open("a") as err:
        async with Client(stdio_client(params, errlog=err), **client_options) as client:
            yield client


def source_id(text: str) -> str:
    found = SID.findall(text)
    assert found, text[-600:]
    return str(found[-1])


async def read_back(client: Client, tool: str, sid: str) -> tuple[bytes, int]:
    """The artifact's bytes, reassembled from every page the read tool gives: (bytes, pages)."""
    out, offset, char_offset, pages = b"", 0, 0, 0
    while True:
        page = await client.call_tool(tool, {"source_id": sid, "offset": offset, "char_offset": char_offset})
        assert not page.is_error, page.content
        text = _only_text(page)
        out += unrender(text)
        pages += 1
        data: Any = page.structured_content
        if data["eof"]:
            return out, pages
        offset, char_offset = data["next_offset"], data["next_char_offset"]


def _only_text(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return str(result.content[0].text)


class Pipe:
    """A channel end of an in-memory relay: what one side sends, the other receives."""

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]) -> None:
        self.inbox, self.outbox = inbox, outbox

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, message: bytes) -> None:
        await self.outbox.put(message)

    async def close(self) -> None:
        await self.outbox.put(None)

    async def put(self, message: dict[str, Any] | bytes) -> None:
        await self.outbox.put(message if isinstance(message, bytes) else orjson.dumps(message))

    async def get(self, timeout: float = 10) -> Any:
        raw = await asyncio.wait_for(self.inbox.get(), timeout)
        return None if raw is None else orjson.loads(raw)

    async def get_raw(self, timeout: float = 10) -> bytes | None:
        return await asyncio.wait_for(self.inbox.get(), timeout)

    async def reply(self, result: Any = None, *, error: dict[str, Any] | None = None) -> dict[str, Any]:
        """(Upstream side) answer the next request under the id the proxy gave it; that request."""
        request = await self.get()
        answer = {"error": error} if error is not None else {"result": result}
        await self.put({"jsonrpc": "2.0", "id": request["id"], **answer})
        return dict(request)


class SpoolingPipe(Pipe):
    """The relay's end of the upstream pipe, spooling a line over ``over`` bytes as the stdio
    channel does (long strings from 1,000 bytes, read back 333 bytes at a time)."""

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None],
                 over: int) -> None:
        super().__init__(inbox, outbox)
        self.over = over

    async def receive(self) -> bytes | Spool | None:  # type: ignore[override]
        line = await self.inbox.get()
        if line is None or len(line) <= self.over:
            return line
        spool = Spool(long_bytes=1000, piece=333, lenient=True)
        for n in range(0, len(line), 4096):
            spool.feed(line[n:n + 4096])
        spool.finish()
        return spool


def _pair(spool_over: int | None = None) -> tuple[Pipe, Pipe]:
    a: asyncio.Queue[bytes | None] = asyncio.Queue()
    b: asyncio.Queue[bytes | None] = asyncio.Queue()
    return Pipe(a, b), Pipe(b, a) if spool_over is None else SpoolingPipe(b, a, spool_over)


@asynccontextmanager
async def relay(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[Pipe, Pipe]]:
    """(client, upstream): the test plays both sides of a running relay."""
    async with relay_with(tmp_path, **settings) as (client, upstream, _):
        yield client, upstream


@asynccontextmanager
async def relay_with(tmp_path: Path, spool_over: int | None = None,
                     **settings: Any) -> AsyncIterator[tuple[Pipe, Pipe, Relay]]:
    """(client, upstream, the relay): as :func:`relay`, with the relay to look at; with
    ``spool_over``, the upstream's lines over that size reach the relay spooled."""
    store = LocalStore(tmp_path / "store")
    config = ProxySettings(**settings)
    policy = config.policy()
    spiller = Spiller(store, RELAY_SESSION, policy)
    relay_ = Relay(ResultSpiller(spiller, config), AgentTools(store, RELAY_SESSION, policy=policy), config)
    client, client_side = _pair()
    upstream, upstream_side = _pair(spool_over)
    task = asyncio.create_task(relay_.run(client_side, upstream_side, drain_timeout=1))
    try:
        yield client, upstream, relay_
    finally:
        await client.outbox.put(None)
        await upstream.outbox.put(None)
        await asyncio.wait_for(task, 10)
        spiller.close()
        store.close()


class RawProxy:
    """``s3spill mcp-proxy`` (or ``s3spill mcp``) as a process, spoken to line by line (no SDK
    between); ``record`` is where its upstream writes what it received, if it has one."""

    def __init__(self, command: list[str], record: Path, errlog: Path) -> None:
        self.record = record
        self.errlog = errlog
        with errlog.open("wb") as err:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         env=child_env({}))
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout: float = 30) -> Any:
        """The next message from the proxy (None at its end of output)."""
        line = self._lines.get(timeout=timeout)
        return json.loads(line) if line else None

    def answer(self, timeout: float = 30) -> Any:
        """The next response (notifications and the server's requests are skipped)."""
        while True:
            msg = self.recv(timeout)
            if msg is None or "method" not in msg:
                return msg

    def handshake(self) -> dict[str, Any]:
        self.send(INIT)
        answer = self.answer()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return dict(answer)

    def upstream_got(self) -> list[Any]:
        """Every line the upstream received, parsed (None for one that is not JSON)."""
        out: list[Any] = []
        for line in self.record.read_bytes().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(None)
        return out

    def close(self, timeout: float = 30) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        return self.errlog.read_text(errors="replace")
