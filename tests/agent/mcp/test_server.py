"""`s3spill mcp` driven by the SDK's own client, over stdio and streamable HTTP, on both stores.

Each test starts the real command in a subprocess, bound to one store and session by its
configuration, and walks a model's path: list the tools, read a page, continue a long
line with char_offset, grep; then a foreign source id and a tampered artifact, each a
one-line tool error after which the same connection keeps serving.
"""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.cli import main as cli_main
from s3spill.store import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.testing import EmbeddedS3, child_env, free_port
from tests.agent.mcp.http_server import serving
from tests.artifacts.inspect_store import overwrite
from tests.conftest import TEST_BUCKET, TEST_CONFIG

SESSION = "mcp-session"
LONG_LINE = "".join(f"{i:06d}," for i in range(15_000))  # 105,000 characters
DATA = (
    "".join(f"{i:05d} {'ERROR disk full' if i % 1000 == 999 else 'ok'}\n" for i in range(6_000))
    + LONG_LINE + "\n"
    + "".join(f"{i:05d} tail\n" for i in range(6_001, 6_100))
).encode()
LONG_LINE_NUMBER = 6_001  # 1-based
_FOOTER = re.compile(r"continue with offset=(\d+), char_offset=(\d+)\]")


@dataclass
class Fixture:
    """A store with three artifacts, and how a child process reaches it."""

    store: ObjectStore
    env: dict[str, str]
    good: str
    foreign: str
    tampered: str


def _prepare(store: ObjectStore, env: dict[str, str]) -> Fixture:
    mine = ArtifactStore(store, TEST_CONFIG, session_id=SESSION)
    good = mine.write(SESSION, DATA, "bash").source_id
    tampered = mine.write(SESSION, DATA, "bash").source_id
    foreign = ArtifactStore(store, TEST_CONFIG, session_id="someone-else").write(
        "someone-else", b"secret\n", "bash").source_id
    sid = keys.SourceId.parse(tampered)
    akey = keys.artifact_key(sid.session_hash, sid.name)
    overwrite(store, akey, DATA.replace(b"00999 ERROR", b"00999 HIDDE"), dict(store.head(akey).metadata))
    return Fixture(store, env, good, foreign, tampered)


@pytest.fixture(params=["local", "moto_server"])
def fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fixture]:
    if request.param == "local":
        store: ObjectStore = LocalStore(tmp_path / "store", TEST_CONFIG)
        env = child_env({"S3SPILL_STORE": store.url, "S3SPILL_SESSION": SESSION})
    else:
        s3: EmbeddedS3 = request.getfixturevalue("moto_server")
        store = s3.store(TEST_BUCKET, f"mcp/{uuid.uuid4().hex}", TEST_CONFIG)
        env = child_env({**s3.env(), "S3SPILL_STORE": store.url, "S3SPILL_SESSION": SESSION})
    yield _prepare(store, env)
    store.close()


def _text(result: Any) -> str:
    assert len(result.content) == 1
    return str(result.content[0].text)


async def _walk(client: Client, fx: Fixture) -> dict[str, str]:
    """The model's path through the server; returns the error lines it received."""
    listed = await client.list_tools()
    names = {tool.name for tool in listed.tools}
    assert names == {"read_artifact", "grep_artifact", "list_artifacts", "externalize"}
    read = next(t for t in listed.tools if t.name == "read_artifact")
    assert "do not re-run" in (read.description or "").lower()
    assert read.input_schema["required"] == ["source_id"]

    page = await client.call_tool("read_artifact", {"source_id": fx.good, "offset": 5_990,
                                                     "limit": 5})
    text = _text(page)
    assert not page.is_error
    assert " 5991\t05990 ok" in text and "continue with offset=5995, char_offset=0]" in text

    # The long line does not fit one page: follow the footers until the line is complete.
    seen, offset, char_offset, pages = "", LONG_LINE_NUMBER - 1, 0, 0
    while True:
        result = await client.call_tool("read_artifact", {"source_id": fx.good, "offset": offset,
                                                           "char_offset": char_offset, "limit": 1})
        text = _text(result)
        assert not result.is_error and len(text) <= 40_000
        row = next(r for r in text.splitlines() if r.lstrip().startswith(f"{LONG_LINE_NUMBER}\t"))
        seen += row.split("\t", 1)[1]
        pages += 1
        m = _FOOTER.search(text)
        assert m is not None, text[-300:]
        offset, char_offset = int(m.group(1)), int(m.group(2))
        if char_offset == 0:
            break
    assert seen == LONG_LINE and pages >= 3 and offset == LONG_LINE_NUMBER

    grep = await client.call_tool("grep_artifact", {"source_id": fx.good, "pattern": "ERROR",
                                                    "max_matches": 2})
    text = _text(grep)
    assert not grep.is_error
    assert "  1000:\t00999 ERROR disk full" in text
    assert "[2 of 6 matching lines shown; 4 more omitted" in text

    errors: dict[str, str] = {}
    for name, args in (
        ("foreign", {"source_id": fx.foreign}),
        ("tampered", {"source_id": fx.tampered, "offset": 990, "limit": 20}),
        ("malformed", {"source_id": "../../etc/passwd"}),
        ("bad_args", {"source_id": fx.good, "offset": "ten"}),
    ):
        result = await client.call_tool("read_artifact", args)
        errors[name] = _text(result)
        assert result.is_error and "\n" not in errors[name], (name, errors[name])
        # ...and the server keeps serving on the same connection.
        again = await client.call_tool("read_artifact", {"source_id": fx.good, "limit": 1})
        assert not again.is_error and "00000 ok" in _text(again)
    result = await client.call_tool("grep_artifact", {"source_id": fx.tampered, "pattern": "x"})
    assert result.is_error and _text(result).startswith("IntegrityError: ")

    # The harness-facing tool: a large output comes back as a pointer the read tool follows.
    big = "".join(f"step {i} done\n" for i in range(20_000)) + "FAILED: 1 test\n"
    pointer = _text(await client.call_tool("externalize", {"text": big, "tool": "bash",
                                                           "call_id": "c-1", "exit_code": 1}))
    assert len(pointer) < 40_000 and pointer.rstrip().endswith("already stored.")
    assert "read_artifact(source_id" in pointer and "grep_artifact(source_id" in pointer
    stored = _need_sid(pointer)
    tail = _text(await client.call_tool("read_artifact", {"source_id": stored, "offset": 20_000}))
    assert "20001\tFAILED: 1 test" in tail and "[EOF" in tail
    small = await client.call_tool("externalize", {"text": "ok\n", "tool": "bash"})
    assert _text(small) == "ok\n" and not small.is_error
    bad = await client.call_tool("externalize", {"text": 5, "tool": "bash"})
    assert bad.is_error and _text(bad).startswith("InvalidRequest: externalize takes")

    assert errors["foreign"].startswith("SourceIdError: ") and "does not belong" in errors["foreign"]
    assert errors["tampered"].startswith("IntegrityError: ") and fx.tampered in errors["tampered"]
    assert errors["malformed"].startswith("SourceIdError: malformed source id")
    assert errors["bad_args"] == "InvalidRequest: offset must be an integer"
    return errors


def _need_sid(pointer: str) -> str:
    m = re.search(r'source_id="([^"]+)"', pointer)
    assert m is not None, pointer[-400:]
    return m.group(1)


def _cli_error(fx: Fixture, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
               *argv: str) -> str:
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
        if name in fx.env:
            monkeypatch.setenv(name, fx.env[name])
    code = cli_main(["--store", fx.store.url, "--session", SESSION, "read", *argv])
    err = capsys.readouterr().err
    assert code in (2, 5) and err.startswith("s3spill: ")  # 5: corrupt
    # The CLI's line is "<what> (<hint>)"; the tools' error is the <what>.
    return err.removeprefix("s3spill: ").rstrip("\n").rsplit(" (", 1)[0]


def _server_cmd(*extra: str) -> list[str]:
    return [sys.executable, "-m", "s3spill", "mcp", *extra]


def test_stdio_transport(fixture: Fixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    """Over stdio the SDK client lists, pages, continues a long line, greps, and gets one-line
    errors (foreign id refused with the CLI's exact words, tampered bytes refused) while the
    server keeps serving."""
    cmd = _server_cmd()
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=fixture.env)

    async def run() -> dict[str, str]:
        with (tmp_path / "server.err").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return await _walk(client, fixture)

    errors = anyio.run(run)
    # The CLI says the same refusal of the same id, and also which sessions it compared
    # (only the CLI knows where its session came from).
    cli_foreign = _cli_error(fixture, monkeypatch, capsys, fixture.foreign)
    assert cli_foreign.startswith(errors["foreign"].removesuffix(" does not belong to this session"))
    assert "not to this call's session" in cli_foreign
    assert errors["tampered"] == _cli_error(fixture, monkeypatch, capsys, fixture.tampered,
                                            "--offset", "990", "--limit", "20")


@contextmanager
def _http_server(env: dict[str, str], log: Path) -> Iterator[str]:
    with serving([], env, log, "127.0.0.1", free_port()) as url:
        yield url


def test_http_transport(fixture: Fixture, tmp_path: Path) -> None:
    """Over streamable HTTP on 127.0.0.1 the same walk passes, and a second client connecting
    after the errors is served too."""
    with _http_server(fixture.env, tmp_path / "server.log") as url:

        async def run() -> None:
            async with Client(url) as client:
                await _walk(client, fixture)
            async with Client(url) as second:
                result = await second.call_tool("grep_artifact", {"source_id": fixture.good,
                                                                  "pattern": "tail$"})
                # The CLI's default (100 matches): all 99 are shown.
                assert not result.is_error and "[99 matching lines;" in _text(result)

        anyio.run(run)


@pytest.mark.parametrize(("argv", "message"), [
    (["--session", SESSION, "mcp", "--http", "0.0.0.0:8080"], "non-loopback address '0.0.0.0'"),
    (["--session", SESSION, "mcp", "--http", "[::]:8080"], "non-loopback address '::'"),
    (["--session", SESSION, "mcp", "--http", "localhost:http"], "--http expects HOST:PORT"),
    (["mcp"], "no session"),
])
def test_refused_configurations(argv: list[str], message: str, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """No session, a non-loopback address without --allow-remote, or a bad address: one line, exit 2."""
    monkeypatch.delenv("S3SPILL_SESSION", raising=False)
    code = cli_main(["--store", (tmp_path / "s").as_uri(), *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


@pytest.mark.parametrize(("value", "expected"), [
    ("8765", ("127.0.0.1", 8765)), (":8765", ("127.0.0.1", 8765)),
    ("127.0.0.2:1", ("127.0.0.2", 1)), ("[::1]:9000", ("::1", 9000)),
    ("localhost:80", ("localhost", 80)),
])
def test_http_address_defaults_to_loopback(value: str, expected: tuple[str, int]) -> None:
    """A bare port binds 127.0.0.1; explicit hosts and bracketed IPv6 are parsed as given."""
    from s3spill.agent.mcp.config import is_loopback, parse_http_address

    assert parse_http_address(value) == expected and is_loopback(expected[0])
