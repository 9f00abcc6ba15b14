"""`s3spill run` of a small output: printed by the fast path exactly as the Spiller would print it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3spill.cli.parser import settings_table
from s3spill.cli.run_fast import CONTROL_BYTES, FAST_INLINE_BYTES, RUN_SETTINGS, inline_as_is
from s3spill.context.policy import SpillPolicy
from s3spill.context.secrets import default_detector
from s3spill.context.secrets.triggers import TRIGGERS, may_hold_secret
from s3spill.typed import detect

Probe = Callable[..., dict[str, Any]]
RunSh = Callable[..., subprocess.CompletedProcess[bytes]]
#: Commands whose output each takes one of the fast path's branches.
COMMANDS = {
    "small text": "echo hi; echo there",
    "no output, failing": "exit 7",
    "no final newline": "printf 'last line'",
    "a control byte (binary)": "printf 'a\\001b\\000c'",
    "not UTF-8": "printf 'caf\\351\\n'",
    "a secret": "echo AWS_KEY=AKIAIOSFODNN7EXAMPLE",
    "a byte-order mark": "printf '\\357\\273\\277bom\\n'",
    "just over the fast limit": f"head -c {FAST_INLINE_BYTES + 1} /dev/zero | tr '\\0' a; echo",
    "a signal": "kill -TERM $$",
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_fast_path_prints_what_the_full_path_prints(run_sh: RunSh, name: str) -> None:
    """Same stdout, stderr and exit status as the full path (forced by a setting the fast path
    leaves to the parser), for every branch: inline, binary, invalid UTF-8, secret, over the limit."""
    fast = run_sh(COMMANDS[name])
    full = run_sh(COMMANDS[name], S3SPILL_SEGMENT_BYTES="1048576")
    assert fast.returncode == full.returncode
    if b"source_id=" in full.stdout:  # stored twice: same size and lines, another artifact name
        assert fast.stdout.split(b"stored as")[0] == full.stdout.split(b"stored as")[0]
    else:
        assert (fast.stdout, fast.stderr) == (full.stdout, full.stderr)


def test_a_small_run_imports_neither_the_parser_nor_the_spill_path(probe: Probe) -> None:
    """`run -- echo hi`: the output and exit status, with no argparse, pydantic, store or Spiller."""
    got = probe(["run", "--", "sh", "-c", "echo hi; exit 3"])
    assert got["code"] == 3 and got["printed"] == "hi"
    assert got["heavy"] == [] and not {"argparse", "logging", "typing"} & set(got["modules"])


def test_a_large_output_is_handed_on_with_every_byte(probe: Probe) -> None:
    """The full path continues the running command: the pointer counts all 100,000 lines."""
    got = probe(["run", "--", "sh", "-c", "seq 1 100000; exit 4"])
    assert got["code"] == 4 and "588895 bytes, 100000 lines" in got["printed"]


def test_the_fast_limits_follow_the_spill_policy() -> None:
    """The byte limit is under the shell threshold, the shell rule compresses nothing and no token
    budget applies, the control bytes are detection's, and the settings are run's."""
    policy = SpillPolicy()
    shell = policy.for_tool("bash")
    assert shell.threshold_unit == "chars" and shell.threshold >= FAST_INLINE_BYTES
    assert policy.hard_cap_chars >= FAST_INLINE_BYTES and not shell.log_compress
    assert policy.max_inline_tokens is None
    assert CONTROL_BYTES == detect._CONTROLS
    run_settings = {name for name, _, commands in settings_table()
                    if {"run", "(all)"} & set(commands.split(", "))}
    assert run_settings == RUN_SETTINGS


def test_no_secret_rule_lacks_a_trigger_the_fast_path_checks() -> None:
    """may_hold_secret's union holds every rule's trigger, so its "no" means masking changes nothing."""
    detector = default_detector()
    assert detector.untriggered == []
    assert {rule.trigger for rule in detector.rules} <= set(TRIGGERS.values())
    assert may_hold_secret(b"token: ghp_0123456789abcdefghij") and not may_hold_secret(b"hi\n")


@pytest.mark.parametrize(("data", "as_is"), [
    (b"hi\n", True), (b"", True), (b"\x1b[31mred\x1b[0m\n", True), (b"a\x00b", False),
    (b"\xff", False), (b"x" * (FAST_INLINE_BYTES + 1), False), (b"password=hunter2hunter2\n", False),
])
def test_inline_as_is_is_true_only_when_certain(data: bytes, as_is: bool) -> None:
    """Valid UTF-8, no binary control byte, no secret trigger, within the limit."""
    assert inline_as_is(data) is as_is



def test_a_store_that_cannot_be_opened_still_shows_the_output(run_sh: RunSh, tmp_path: Path) -> None:
    """The command ran already when opening the store fails (its parent is a file): the model gets
    a bounded head and tail marked as not saved, with the reason, and the command's exit code."""
    (tmp_path / "plain").write_text("a file, not a directory")
    got = run_sh("seq 1 100000; exit 4", S3SPILL_STORE=(tmp_path / "plain" / "store").as_uri())
    out = got.stdout.decode()
    assert got.returncode == 4, got.stderr
    assert out.startswith("1\n2\n3\n") and "\n100000\n" in out and len(out) < 40_000
    assert "NOT" in out and "Not a directory" in out and "source_id=" not in out
