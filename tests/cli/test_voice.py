"""What a new user meets at the terminal: each message names its flag and has one true hint."""

from __future__ import annotations

import importlib
import re
import sys

import pytest

from s3spill import keys
from s3spill.cli.exitcodes import ExitCode
from tests.cli.conftest import CliCall

ONE_LINE = re.compile(r"^s3spill: \S.*\n$")


@pytest.mark.parametrize("value", ["0", "-1"])
def test_limit_below_one_says_the_same_bound(value: str, cli: CliCall, local: object) -> None:
    """`--limit 0` and `--limit -1` both say "must be >= 1" (-1 used to say ">= 0")."""
    code, _, err = cli("read", "sid", "--limit", value)
    assert code == 2 and err == (f"s3spill: --limit: must be >= 1, got {value} "
                                 "(see `s3spill read --help`)\n")


def test_a_bad_duration_names_its_flag(cli: CliCall, local: object) -> None:
    """`gc plan --orphan-ttl 5x` is a usage error naming --orphan-ttl, not a generic hint."""
    code, _, err = cli("gc", "plan", "--orphan-ttl", "5x")
    assert code == 2 and err.startswith("s3spill: --orphan-ttl: bad duration '5x'"), err
    assert "check the value named above" not in err


def test_gc_apply_of_a_missing_plan_file_is_a_usage_error(cli: CliCall, local: object,
                                                         tmp_path: object) -> None:
    """A mistyped plan path exits 2 (usage), not 4 ("refused"), and says what to give."""
    code, _, err = cli("gc", "apply", "/no/such/plan.jsonl")
    assert code == ExitCode.ERROR and ONE_LINE.match(err), err
    assert "does not exist" in err and "`gc plan` printed" in err


def test_stop_of_an_unknown_live_id_gives_one_hint(cli: CliCall, local: object) -> None:
    """`stop` of a live id never started says so with one hint, not two in a row."""
    live = f"live:{keys.session_hash('s')}:20260101T000000Z-000000000000-sh"
    code, _, err = cli("stop", live, "--wait", "0")
    assert code == 2 and ONE_LINE.match(err) and err.count("(") == 1, err
    assert "was ever started in this store" in err


def test_a_missing_mcp_sdk_hints_the_extra_only(cli: CliCall, local: object,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the MCP SDK, `s3spill mcp` says what to install, and no generic hint."""
    monkeypatch.setitem(sys.modules, "s3spill.agent.mcp.server", None)  # import fails
    # ... even when another test module already imported it (the package keeps the attribute).
    monkeypatch.delattr(importlib.import_module("s3spill.agent.mcp"), "server", raising=False)
    code, _, err = cli("--session", "s", "mcp")
    assert code == 2 and err.endswith("(pip install 's3spill[mcp]')\n") and err.count("(") == 1, err


def test_run_speaks_with_the_same_prefix(cli: CliCall, local: object) -> None:
    """`run` with no command, or one that does not exist, uses the one prefix and a hint."""
    assert cli("run") == (2, "", "s3spill: run: no command given (usage: s3spill run [--tool NAME]"
                                 " [--json] -- CMD ARGS...)\n")
    code, _, err = cli("run", "--", "no-such-command-s3spill")
    assert code == 127 and err == ("s3spill: run: command not found: no-such-command-s3spill "
                                   "(check its name and $PATH)\n")


def test_a_bad_flag_read_through_the_policy_hints_the_flag(cli: CliCall, local: object) -> None:
    """`--segment-bytes -5` names its flag and says to change it, not to fix a policy file
    nobody wrote."""
    code, _, err = cli("run", "--background", "--segment-bytes", "-5", "--", "true")
    assert code == 2 and err.startswith("s3spill: PolicyError: --segment-bytes: "), err
    assert err.endswith("(change the flag or variable named above)\n") and "config check" not in err
