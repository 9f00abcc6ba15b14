"""docs/harnesses.md pastes: its JSON parses, its s3spill command lines parse as the CLI's,
and both servers' --help name every tool they serve."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from s3spill.agent.tools import AgentTools
from s3spill.cli import build_parser
from s3spill.proxy.relay import own_tool_specs
from s3spill.proxy.settings import ProxySettings
from s3spill.store.local import LocalStore
from s3spill.testing import child_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "harnesses.md"
MARKERS = ["claude-code-settings", "claude-desktop-config", "cursor-config", "gemini-cli-settings",
           "codex-config", "proxy-config"]


def _json_block(marker: str) -> Any:
    """The JSON (or, for Codex's config.toml, TOML) block after ``<!-- marker -->``."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(rf"<!-- {marker} -->\n```(json|toml)\n(.*?)^```", text, re.M | re.S)
    assert m, f"no json or toml block after <!-- {marker} -->"
    return json.loads(m.group(2)) if m.group(1) == "json" else tomllib.loads(m.group(2))


def _s3spill_argv(doc: Any) -> Iterator[list[str]]:
    """Every s3spill command line in a config: hook commands and mcpServers entries."""
    if isinstance(doc, dict):
        command = doc.get("command")
        if isinstance(command, str) and doc.get("type") == "command":
            words = shlex.split(command)
            if words[0] == "s3spill":
                yield words[1:]
        elif isinstance(command, str) and Path(command).name == "s3spill":
            yield list(doc.get("args", []))
        for value in doc.values():
            yield from _s3spill_argv(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _s3spill_argv(value)


@pytest.mark.parametrize("marker", MARKERS)
def test_the_documented_json_parses_and_its_commands_are_real(marker: str) -> None:
    """Each block is JSON, and each s3spill command line in it parses (SystemExit otherwise)."""
    doc = _json_block(marker)
    if marker == "proxy-config":
        assert ProxySettings.model_validate(doc).thresholds == {"read_text_file": 200_000}
        return
    calls = list(_s3spill_argv(doc))
    assert calls, marker
    for argv in calls:
        args = build_parser({}).parse_args(argv)
        assert args.command in ("hook", "mcp", "mcp-proxy"), argv


def _help(*argv: str) -> str:
    return subprocess.run([sys.executable, "-m", "s3spill", *argv, "--help"], capture_output=True,
                          text=True, check=True, env=child_env({})).stdout


def test_each_servers_help_names_every_tool_it_serves(tmp_path: Path) -> None:
    """`s3spill mcp --help` and `s3spill mcp-proxy --help` list exactly the tools they expose."""
    tools = AgentTools(LocalStore(tmp_path / "s"), "help")
    served = [name for name, _, _ in tools.declared()] + ["externalize"]
    mcp_help = _help("mcp")
    assert all(re.search(rf"^  {name} ", mcp_help, re.M) for name in served), mcp_help
    settings = ProxySettings()
    proxy_help = _help("mcp-proxy")
    own = [spec["name"] for spec in own_tool_specs(AgentTools(LocalStore(tmp_path / "s"), "help",
                                                              policy=settings.policy()), settings)]
    assert own == list(settings.own_tools)
    assert all(re.search(rf"^  {name} ", proxy_help, re.M) for name in own), proxy_help
