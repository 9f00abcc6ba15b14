"""The harness test bed: a real harness binary, a scratch HOME, a scripted model API.

Every test here is marked ``harness`` (deselected by default; ``pytest -m harness
tests/harnesses`` runs them, and ``.ci/run`` does after the main suite). Claude Code is
the binary bundled in the claude-agent-sdk wheel (2.1.332 for 0.2.189), run with ``-p``,
``--settings`` and ``--output-format stream-json`` against :mod:`tests.harnesses.model_api`
through ``ANTHROPIC_BASE_URL``, with update checks, telemetry and error reports off.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from s3spill.testing import child_env
from tests.harnesses.model_api import ScriptedModel, StandIn, Turn

pytestmark = pytest.mark.harness

#: The variables that switch off everything a scratch run must not do (network beyond
#: the stand-in, updates, telemetry, error reports) and let a root sandbox skip prompts.
CLAUDE_QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "IS_SANDBOX": "1",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.harness)


def claude_binary() -> Path:
    import claude_agent_sdk

    return Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


def s3spill_cmd(*args: str) -> str:
    """A shell command line that runs this checkout's s3spill (what a settings file names)."""
    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", "s3spill", *args))


@dataclass
class ClaudeRun:
    """One ``claude -p`` run: what the model received (``script``) and what Claude printed."""

    script: ScriptedModel
    proc: subprocess.CompletedProcess[bytes]
    events: list[dict[str, Any]] = field(default_factory=list)

    def results(self) -> list[dict[str, Any]]:
        return self.script.tool_results()


@dataclass
class ClaudeCode:
    """A scratch HOME and project for the real Claude Code, and a way to run it on a script."""

    home: Path
    project: Path
    store_url: str
    hooks: dict[str, Any] = field(default_factory=dict)
    mcp: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def session(self) -> str:
        """The project session the hooks and ``s3spill mcp`` agree on."""
        return f"claude-code:{self.project}"

    def use_s3spill(self, *, pre: bool = True, post: bool = True, mcp: bool = True,
                    timeout: int = 60) -> None:
        """The wiring of docs/harnesses.md: the hooks and ``s3spill mcp`` under the name s3spill."""
        hook = {"type": "command", "command": s3spill_cmd("--store", self.store_url, "hook", "claude-code"),
                "timeout": timeout}
        if pre:
            self.hooks["PreToolUse"] = [{"matcher": "Bash", "hooks": [hook]}]
        if post:
            self.hooks["PostToolUse"] = [{"matcher": "*", "hooks": [hook]}]
        if mcp:
            session = ' --session "claude-code:$CLAUDE_PROJECT_DIR" mcp'
            serve = s3spill_cmd("--store", self.store_url) + session
            self.mcp["s3spill"] = {"command": "sh", "args": ["-c", f"exec {serve}"]}

    def _env(self, api: StandIn) -> dict[str, str]:
        env = child_env({"HOME": str(self.home), "ANTHROPIC_BASE_URL": api.url,
                         "ANTHROPIC_API_KEY": "sk-standin",
                         **CLAUDE_QUIET, **self.env})
        for name in ("S3SPILL_SESSION", "S3SPILL_STORE", "CLAUDE_CODE_SESSION_ID", "CLAUDECODE",
                     "CLAUDE_PROJECT_DIR"):
            if name not in self.env:
                env.pop(name, None)
        return env

    def _argv(self, *args: str) -> list[str]:
        config = self.home / "mcp.json"
        config.write_text(json.dumps({"mcpServers": self.mcp}))
        return [str(claude_binary()), "-p", *args, "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions", "--settings", json.dumps({"hooks": self.hooks}),
                "--mcp-config", str(config), "--strict-mcp-config"]

    def run(self, turns: list[Turn], *args: str, prompt: str = "go", timeout: float = 300) -> ClaudeRun:
        script = ScriptedModel(turns)
        with StandIn(script) as api:
            proc = subprocess.run(self._argv(prompt, *args), cwd=self.project, env=self._env(api),
                                  capture_output=True, timeout=timeout, check=False)
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip().startswith(b"{")]
        assert proc.returncode == 0, proc.stderr.decode()[-3000:] + proc.stdout.decode()[-3000:]
        return ClaudeRun(script, proc, events)

    def conversation(self, prompts: list[str], turns: list[Turn], timeout: float = 300) -> ScriptedModel:
        """Several user messages to one Claude Code process (``--input-format stream-json``),
        each sent once the previous one has its result: ``/clear`` works there as typed."""
        script = ScriptedModel(turns)
        with StandIn(script) as api:
            proc = subprocess.Popen(self._argv("--input-format", "stream-json"), cwd=self.project,
                                    env=self._env(api), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
            assert proc.stdin is not None and proc.stdout is not None
            try:
                for prompt in prompts:
                    message = {"type": "user", "message": {"role": "user", "content": prompt}}
                    proc.stdin.write(json.dumps(message).encode() + b"\n")
                    proc.stdin.flush()
                    for line in proc.stdout:
                        if json.loads(line).get("type") == "result":
                            break
                proc.stdin.close()
                assert proc.wait(timeout) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        return script


def scratch(tmp_path: Path) -> tuple[Path, Path, str]:
    """A harness's scratch HOME, its project directory (resolved) and a local store's URL."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir(parents=True)
    home.mkdir()
    return home, project.resolve(), (tmp_path / "store").as_uri()


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[ClaudeCode]:
    """Claude Code in a scratch HOME with a project directory and a local store."""
    yield ClaudeCode(*scratch(tmp_path))


def npm_bin(name: str) -> Path:
    """A harness installed by ``npm install --prefix tests/harnesses/npm`` (.ci/run does it)."""
    path = Path(__file__).with_name("npm") / "node_modules" / ".bin" / name
    assert path.exists(), f"{path} missing: run npm install --prefix tests/harnesses/npm"
    return path


@dataclass
class GeminiCli:
    """A scratch HOME for the real Gemini CLI (0.61.0) against the stand-in (GOOGLE_GEMINI_BASE_URL)."""

    home: Path
    project: Path
    store_url: str
    session: str = "gemini-test"
    hooks: dict[str, Any] = field(default_factory=dict)
    mcp: dict[str, Any] = field(default_factory=dict)

    def use_s3spill(self, *, before: bool = True, after: bool = True) -> None:
        """The wiring of docs/harnesses.md: both hooks and ``s3spill mcp`` under one named session."""
        hook = {"name": "s3spill", "type": "command", "timeout": 60000,
                "command": s3spill_cmd("--store", self.store_url, "--session", self.session, "hook",
                                       "gemini-cli")}
        if before:
            self.hooks["BeforeTool"] = [{"matcher": "run_shell_command", "hooks": [hook]}]
        if after:
            self.hooks["AfterTool"] = [{"matcher": ".*", "hooks": [hook]}]
        self.mcp["s3spill"] = {"command": sys.executable,
                               "args": ["-m", "s3spill", "--store", self.store_url, "--session", self.session,
                                        "mcp"],
                               "env": {"PYTHONPATH": child_env({})["PYTHONPATH"]}}

    def run(self, turns: list[Turn], timeout: float = 300) -> ScriptedModel:
        settings = {"general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                    "telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False},
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "hooks": self.hooks, "mcpServers": self.mcp}
        (self.home / ".gemini").mkdir(exist_ok=True)
        (self.home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        script = ScriptedModel(turns)
        with StandIn(script) as api:
            env = child_env({"HOME": str(self.home), "GEMINI_API_KEY": "standin",
                             "GOOGLE_GEMINI_BASE_URL": api.url,
                             "GEMINI_CLI_TRUST_WORKSPACE": "true"})
            for name in ("S3SPILL_SESSION", "S3SPILL_STORE"):
                env.pop(name, None)
            proc = subprocess.run([str(npm_bin("gemini")), "-p", "go", "--yolo", "--output-format", "json",
                                   "--model", "gemini-2.5-flash"],
                                  cwd=self.project, env=env, capture_output=True, timeout=timeout,
                                  check=False)
        assert proc.returncode == 0, proc.stderr.decode()[-3000:] + proc.stdout.decode()[-2000:]
        return script


@pytest.fixture
def gemini(tmp_path: Path) -> Iterator[GeminiCli]:
    """Gemini CLI in a scratch HOME with a project directory and a local store."""
    yield GeminiCli(*scratch(tmp_path))


DOCS = Path(__file__).resolve().parents[2] / "docs" / "harnesses.md"
DOC_STORE = "s3://my-bucket/agents"
DOC_S3SPILL = f"s3spill --store {DOC_STORE} --session codex-me"
#: What a scratch Codex must not do: check for updates, send analytics, export traces.
CODEX_QUIET = {"check_for_update_on_startup": False, "analytics": {"enabled": False},
               "otel": {"exporter": "none"}, "feedback": {"enabled": False}}


@dataclass
class Codex:
    """A scratch ``CODEX_HOME`` for the real Codex CLI (0.171.0) against the Responses stand-in.

    ``codex exec --json`` with a ``model_provider`` on 127.0.0.1 (``wire_api = "responses"``),
    the model ``gpt-5.5`` from Codex's own catalog (so its output limits are the ones users
    get: 10,000 tokens), no sandbox unless a test asks for one, no approvals (the stand-in
    asks for the calls), and
    ``--dangerously-bypass-hook-trust``: Codex runs a hook from config.toml only once the
    user has trusted it (``/hooks``), which a scratch home cannot have done.
    """

    home: Path
    project: Path
    store_url: str
    session: str = "codex-test"
    hooks: dict[str, Any] = field(default_factory=dict)
    mcp: dict[str, Any] = field(default_factory=dict)
    sandbox: str = "danger-full-access"

    def hook(self, command: str | None = None, timeout: int = 60) -> dict[str, Any]:
        return {"type": "command", "timeout": timeout, "command": command or s3spill_cmd(
            "--store", self.store_url, "--session", self.session, "hook", "codex")}

    def use_s3spill(self, *, pre: bool = True, post: bool = True, mcp: bool = True) -> None:
        """The wiring of docs/harnesses.md, taken from its ``codex-config`` block: both hooks and
        ``s3spill mcp`` under one named session, with this checkout's s3spill and a local store."""
        block = re.search(r"<!-- codex-config -->\n```toml\n(.*?)^```", DOCS.read_text(), re.M | re.S)
        assert block, "no codex-config block in docs/harnesses.md"
        doc = tomllib.loads(block[1])
        ours = s3spill_cmd("--store", self.store_url, "--session", self.session)

        def local(handler: dict[str, Any]) -> dict[str, Any]:
            return {**handler, "command": handler["command"].replace(DOC_S3SPILL, ours)}

        for event, wanted in (("PreToolUse", pre), ("PostToolUse", post)):
            if wanted:
                self.hooks[event] = [{**group, "hooks": [local(h) for h in group["hooks"]]}
                                     for group in doc["hooks"][event]]
        if mcp:
            args = [self.store_url if a == DOC_STORE else self.session if a == "codex-me" else a
                    for a in doc["mcp_servers"]["s3spill"]["args"]]
            self.mcp["s3spill"] = {**python_server("-m", "s3spill", *args),
                                   "env_vars": doc["mcp_servers"]["s3spill"].get("env_vars", [])}

    def run(self, turns: list[Turn], timeout: float = 300) -> ScriptedModel:
        import tomlkit

        script = ScriptedModel(turns)
        with StandIn(script) as api:
            provider = {"name": "standin", "base_url": api.url + "/v1", "wire_api": "responses",
                        "env_key": "STANDIN_API_KEY", "request_max_retries": 0, "stream_max_retries": 0}
            # The grace: without it the first request goes out before a Python MCP server
            # (1-2 s to start here) has listed its tools, and the call finds no such tool.
            config = {"model": "gpt-5.5", "model_provider": "standin", "approval_policy": "never",
                      "sandbox_mode": self.sandbox, "mcp_optional_startup_grace_ms": 20_000,
                      **CODEX_QUIET,
                      "model_providers": {"standin": provider}, "mcp_servers": self.mcp, "hooks": self.hooks}
            (self.home / "config.toml").write_text(tomlkit.dumps(config))
            env = {"HOME": str(self.home), "CODEX_HOME": str(self.home), "PATH": os.environ.get("PATH", ""),
                   "STANDIN_API_KEY": "sk-standin", "PYTHONPATH": child_env({})["PYTHONPATH"]}
            proc = subprocess.run([str(codex_binary()), "exec", "--json", "--skip-git-repo-check",
                                   "--dangerously-bypass-hook-trust", "go"], cwd=self.project, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
        assert proc.returncode == 0, proc.stderr.decode()[-3000:] + proc.stdout.decode()[-2000:]
        return script


def codex_binary() -> Path:
    """Codex's native binary (the npm package's per-platform build), run directly: the node
    launcher in front of it adds nothing a test needs."""
    vendor = Path(__file__).with_name("npm") / "node_modules" / "@openai" / "codex-linux-x64" / "vendor"
    found = sorted(vendor.glob("*/bin/codex"))
    assert found, f"no Codex binary under {vendor}: run npm install --prefix tests/harnesses/npm"
    return found[0]


def python_server(*args: str) -> dict[str, Any]:
    """A stdio MCP server entry that runs this interpreter with this checkout importable
    (Codex and Gemini CLI start MCP servers with only a few of their own variables)."""
    return {"command": sys.executable, "args": list(args), "env": {"PYTHONPATH": child_env({})["PYTHONPATH"]}}


@pytest.fixture
def codex(tmp_path: Path) -> Iterator[Codex]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir(parents=True)
    home.mkdir()
    yield Codex(home, project.resolve(), (tmp_path / "store").as_uri())


PLUGIN = Path(__file__).resolve().parents[2] / "examples" / "opencode" / "s3spill.js"


@dataclass
class Opencode:
    """A scratch HOME and project for the real opencode (1.18.33) against the Anthropic stand-in."""

    home: Path
    project: Path
    store_url: str
    session: str = "opencode-test"
    plugin: bool = False
    mcp: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def use_s3spill(self) -> None:
        """The wiring of docs/harnesses.md: the shipped plugin and ``s3spill mcp`` on one session."""
        self.plugin = True
        self.mcp["s3spill"] = {"type": "local", "command": [sys.executable, "-m", "s3spill", "--store",
                                                            self.store_url, "--session", self.session, "mcp"]}

    def run(self, turns: list[Turn], timeout: float = 300) -> ScriptedModel:
        plugins = self.project / ".opencode" / "plugins"
        plugins.mkdir(parents=True, exist_ok=True)
        if self.plugin:
            (plugins / PLUGIN.name).write_text(PLUGIN.read_text())
        script = ScriptedModel(turns)
        with StandIn(script) as api:
            provider = {"anthropic": {"options": {"baseURL": api.url + "/v1", "apiKey": "sk-standin"}}}
            config = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
                      "model": "anthropic/claude-sonnet-4-5", "mcp": self.mcp, "provider": provider}
            (self.project / "opencode.json").write_text(json.dumps(config))
            # Only what it needs: opencode reads provider settings from many variables.
            env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", ""),
                   "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                   "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                   "PYTHONPATH": child_env({})["PYTHONPATH"], "S3SPILL_STORE": self.store_url,
                   "S3SPILL_SESSION": self.session,
                   "S3SPILL_HOOK_COMMAND": json.dumps([sys.executable, "-m", "s3spill"]), **self.env}
            proc = subprocess.run([str(npm_bin("opencode")), "run", "go"], cwd=self.project, env=env,
                                  capture_output=True, timeout=timeout, check=False)
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        return script


@pytest.fixture
def opencode(tmp_path: Path) -> Iterator[Opencode]:
    """opencode in a scratch HOME with a project directory and a local store."""
    yield Opencode(*scratch(tmp_path))
