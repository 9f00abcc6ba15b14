"""`s3spill demo` runs end to end against its embedded S3."""

from __future__ import annotations

import pytest

from s3spill.cli import main
from s3spill.demo.runner import STEPS


def test_demo_runs_every_step_and_reports_no_violation(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo prints every step, the read-back matches, and no guarantee was violated."""
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for title, _ in STEPS:
        assert title in out
    assert "read back and re-hashed: match" in out
    assert "AlreadyExists" in out and "PreconditionFailed" in out
    assert "verdict: OK" in out and "!!" not in out
    assert "orphan deleted: yes; referenced artifact kept: yes" in out
    assert "the page's bytes equal the original output at that place: yes" in out
    assert "(pointer):" in out and "could NOT be saved" in out
    assert "answer: The build fails at line 21337" in out and "is COMMITTED in the session's lease" in out
    assert "reconcile demo-ref-landed: committed" in out and "reconcile demo-ref-lost: aborted" in out
    assert "a late publish of demo-ref-lost is refused" in out
