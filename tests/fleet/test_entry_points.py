"""Every entry point honours the one policy the same way: library, run, spill, hooks, proxy, mcp, gc."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from s3spill.adapters.harness_hooks import answer
from s3spill.cli import build_parser
from s3spill.cli.gc_cmds import _policy
from s3spill.fleet.policy_file import load_policy
from s3spill.proxy.settings import ProxySettings
from s3spill.spill.spiller import Spiller
from s3spill.store.local import LocalStore
from tests.cli.in_process import cli_call

KiB, MiB = 1024, 1024 * 1024
CAPPED = """\
[spill]
max_stored_bytes = "64KiB"
capped_tail_bytes = "4KiB"
secrets = "at_rest"

[quota]
session_objects = 4

[tools.Read]
never_spill = true

[harness.mcp-proxy.tools.fetch]
threshold = 1000

[gc]
orphan_ttl = "3d"
"""
LINE = b"0123456789 the same line again, a long output\n"


def _output(total: int) -> bytes:
    return LINE * (total // len(LINE))


def test_the_library_spiller_takes_cap_quota_and_never_spill(
        fleet_env: Path, write_policy: Callable[..., Path], local_store: LocalStore) -> None:
    """Spiller.from_config: stored copy at the cap, refusal at the quota, Read kept inline."""
    with Spiller.from_config("lib", local_store, config=write_policy(CAPPED)) as spiller:
        first = spiller.externalize(_output(MiB), "bash")
        assert first.spilled and first.stored_bytes is not None and first.stored_bytes <= 64 * KiB
        assert first.total_bytes == len(_output(MiB))
        second = spiller.externalize(_output(MiB), "bash")
        assert second.spilled
        spiller.close()
        third = spiller.externalize(_output(MiB), "bash")  # 2 spills x 2 objects: the quota is reached
        assert not third.spilled and "quota reached" in (third.degraded_reason or "")
        read = spiller.externalize(_output(MiB), "Read")
        assert read.mode != "pointer" and not read.spilled


def test_cli_spill_and_run_store_capped_copies(fleet_env: Path, write_policy: Callable[..., Path],
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`spill -` and `run` (foreground) keep at most the policy's cap of a 1 MiB output."""
    monkeypatch.setenv("S3SPILL_CONFIG", str(write_policy(CAPPED)))
    src = fleet_env / "big.txt"
    src.write_bytes(_output(MiB))
    code, out, err = cli_call(["spill", "--json", str(src)], capsys)
    assert code == 0, err
    ref = json.loads(out)
    assert ref["size_bytes"] <= 64 * KiB
    code, out, err = cli_call(["run", "--json", "--", "cat", str(src)], capsys)
    result = json.loads(out)
    assert code == 0 and result["spilled"] and result["stored_bytes"] <= 64 * KiB, err
    assert result["total_bytes"] == len(_output(MiB))


def test_the_hook_honours_never_spill_and_the_cap(fleet_env: Path, write_policy: Callable[..., Path],
                                                  local_store: LocalStore) -> None:
    """Claude Code's hook: Read passes untouched, Bash is stored capped, under the same policy."""
    loaded = load_policy(write_policy(CAPPED))
    text = _output(MiB).decode()

    def payload(tool: str, response: object) -> bytes:
        return json.dumps({"hook_event_name": "PostToolUse", "session_id": "hooked", "tool_name": tool,
                           "tool_response": response, "tool_use_id": "t1"}).encode()

    read = {"type": "text", "file": {"filePath": "/x", "content": text, "numLines": 1, "startLine": 1,
                                     "totalLines": 1}}
    assert answer("claude-code", payload("Read", read), lambda: local_store, fleet=lambda: loaded) == b""
    out = answer("claude-code", payload("Bash", {"stdout": text, "stderr": "", "interrupted": False}),
                 lambda: local_store, fleet=lambda: loaded)
    assert b"truncated" in out or b"stored copy" in out
    stored = [i for i in local_store.list("") if "/artifacts/" in i.key and not i.key.endswith(".idx")]
    assert len(stored) == 1 and stored[0].size <= 64 * KiB


def test_the_proxy_takes_its_thresholds_and_never_spill_from_the_policy(
        fleet_env: Path, write_policy: Callable[..., Path]) -> None:
    """[harness.mcp-proxy] rules become the proxy's thresholds; its flags still win."""
    loaded = load_policy(write_policy(CAPPED + '\n[proxy]\ntool_prefix = "fleet_"\n'))
    settings = ProxySettings.from_policy(loaded, never_spill=["env"])
    assert settings.thresholds == {"fetch": 1000} and settings.never_spill == {"Read", "env"}
    assert settings.tool_prefix == "fleet_"
    policy = settings.fleet_policy(loaded)
    assert policy.max_stored_bytes == 64 * KiB and policy.secrets == "at_rest"
    assert ProxySettings.from_policy(loaded, tool_prefix="x_").tool_prefix == "x_"


def test_gc_takes_its_ttls_from_the_policy(fleet_env: Path, write_policy: Callable[..., Path],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`gc plan` without --orphan-ttl uses the file's; with it, the flag's."""
    monkeypatch.setenv("S3SPILL_CONFIG", str(write_policy(CAPPED)))
    args = build_parser().parse_args(["gc", "plan", "--all"])
    assert _policy(args, dry_run=True).orphan_ttl == timedelta(days=3)
    args = build_parser().parse_args(["gc", "plan", "--all", "--orphan-ttl", "5d"])
    assert _policy(args, dry_run=True).orphan_ttl == timedelta(days=5)


def test_a_tiny_forced_spill_is_stored(fleet_env: Path, local_store: LocalStore) -> None:
    """`spill` of a 2-byte input goes through the Spiller: its masked summary must not fail the spill."""
    with Spiller(local_store, "tiny") as spiller:
        result = spiller.externalize([b"x\n"], "stdin", force=True)
    assert result.spilled and result.artifact is not None and result.degraded_reason is None
