"""Named failpoints: inert by default, exact when named, loud when misspelled."""

from __future__ import annotations

import subprocess
import sys

import pytest

from s3spill import failpoints
from s3spill.testing import child_env


def test_failpoints_are_inert_unless_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the variable, or naming another point, a failpoint does nothing."""
    monkeypatch.delenv(failpoints.ENV_VAR, raising=False)
    failpoints.failpoint("journal.after_prepared")
    monkeypatch.setenv(failpoints.ENV_VAR, "journal.before_committed=raise;journal.after_prepared=off")
    failpoints.failpoint("journal.after_prepared")
    with pytest.raises(failpoints.FailpointTriggered):
        failpoints.failpoint("journal.before_committed")


def test_malformed_specs_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A malformed spec fails loudly instead of silently disabling a crash test."""
    for bad in ["journal.after_prepared", "journal.after_prepared=explode", "x=kill", "a.b=kill(3)"]:
        with pytest.raises(ValueError):
            failpoints.parse(bad)
    assert failpoints.parse("a.b=sleep(5), c.d=kill") == {
        "a.b": failpoints.Action("sleep", 5), "c.d": failpoints.Action("kill")}
    assert failpoints.parse("a.b=raise@3")["a.b"] == failpoints.Action("raise", None, 3)
    for bad in ["a.b=kill@0", "a.b=kill@", "a.b=kill@x"]:
        with pytest.raises(ValueError):
            failpoints.parse(bad)


def test_a_failpoint_with_a_count_fires_on_that_pass_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """name=raise@3 lets the first two passes through, raises on the third, and not after."""
    monkeypatch.setenv(failpoints.ENV_VAR, "journal.after_prepared=raise@3")
    monkeypatch.setattr(failpoints, "_hits", {})
    failpoints.failpoint("journal.after_prepared")
    failpoints.failpoint("journal.after_prepared")
    with pytest.raises(failpoints.FailpointTriggered):
        failpoints.failpoint("journal.after_prepared")
    failpoints.failpoint("journal.after_prepared")
    monkeypatch.setenv(failpoints.ENV_VAR, "nonsense")
    with pytest.raises(RuntimeError, match="S3SPILL_FAILPOINTS"):
        failpoints.failpoint("journal.after_prepared")


def test_protocol_steps_declare_their_failpoints() -> None:
    """Every protocol step of the journal, owner and reconciler has a declared failpoint."""
    import s3spill.leases.reconcile  # noqa: F401 - importing declares them

    names = set(failpoints.declared())
    assert {"journal.after_prepared", "journal.before_committed", "journal.after_remover",
            "owner.after_publish_write", "owner.after_seal_write", "reconcile.after_seal"} <= names


def test_kill_and_sleep_stop_the_process_at_the_step() -> None:
    """kill SIGKILLs the process at the step; sleep announces it on stderr and blocks."""
    code = "from s3spill.failpoints import failpoint; print('before', flush=True); " \
           "failpoint('journal.after_prepared'); print('after', flush=True)"
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env=child_env({failpoints.ENV_VAR: "journal.after_prepared=kill"}))
    assert killed.returncode == -9 and killed.stdout == "before\n"
    slept = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env=child_env({failpoints.ENV_VAR: "journal.after_prepared=sleep(10)"}))
    assert slept.returncode == 0 and slept.stdout == "before\nafter\n"
    assert f"{failpoints.REACHED_MARKER} journal.after_prepared" in slept.stderr
