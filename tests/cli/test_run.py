"""`s3spill run`: a command's merged output through the Spiller, the command's exit status."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from s3spill.artifacts.store import ArtifactStore
from s3spill.store.local import LocalStore
from s3spill.testing import child_env
from tests.spill.outputs import preview_part, source_id_of

SESSION = "cli-run-session"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = child_env({"S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": SESSION})
    return subprocess.run([sys.executable, "-m", "s3spill", "run", *args], env=env, text=True,
                          capture_output=True, timeout=120)


def test_a_large_failing_command_prints_a_pointer_and_its_exit_status(tmp_path: Path) -> None:
    """`run -- sh -c 'seq 1 2000000; exit 3'` prints a pointer to the exact output and exits 3."""
    proc = _run(tmp_path, "--", "sh", "-c", "seq 1 2000000; exit 3")
    assert proc.returncode == 3, proc.stderr
    out = proc.stdout
    expected = "".join(f"{i}\n" for i in range(1, 2_000_001)).encode()
    assert out.startswith("1\n2\n3\n")
    assert preview_part(out).endswith("1999999\n2000000\n")
    assert f"{len(expected)} bytes, 2000000 lines" in out and "exit code 3" in out
    stored = ArtifactStore(LocalStore(tmp_path / "store"), session_id=SESSION)
    assert b"".join(stored.iter_verified(source_id_of(out))) == expected


def test_stdout_and_stderr_are_interleaved_in_order(tmp_path: Path) -> None:
    """Both streams share one pipe, so the printed text keeps the order the command wrote it in."""
    proc = _run(tmp_path, "--", "sh", "-c", "echo one; echo two >&2; echo three; exit 0")
    assert proc.returncode == 0
    assert proc.stdout == "one\ntwo\nthree\n"


def test_json_prints_the_spill_result(tmp_path: Path) -> None:
    """--json prints the SpillResult, exit code included."""
    proc = _run(tmp_path, "--json", "--tool", "bash", "--", "sh", "-c", "echo hi; exit 7")
    assert proc.returncode == 7
    result = json.loads(proc.stdout)
    assert result["kind"] == "spill_result" and result["context_text"] == "hi\n"
    assert result["exit_code"] == 7 and result["spilled"] is False


def test_a_missing_command_exits_127(tmp_path: Path) -> None:
    """A command that does not exist exits 127, as in a shell."""
    proc = _run(tmp_path, "--", "no-such-command-s3spill")
    assert proc.returncode == 127 and "not found" in proc.stderr


def test_a_signal_becomes_128_plus_its_number(tmp_path: Path) -> None:
    """A command killed by SIGTERM exits 143."""
    proc = _run(tmp_path, "--", "sh", "-c", "kill -TERM $$")
    assert proc.returncode == 143


def _reap(pid_line: str) -> None:
    """Stop the background sleep a test started (its pid is the output's first line)."""
    with contextlib.suppress(ProcessLookupError, ValueError):
        os.kill(int(pid_line), signal.SIGTERM)


def test_a_background_child_holding_the_pipe_does_not_hang_run(tmp_path: Path) -> None:
    """`sh -c 'sleep 60 & echo hi'` returns when sh exits, prints hi, and says the pipe was held open."""
    proc = _run_bounded(tmp_path, "--", "sh", "-c", "sleep 60 & echo $!; echo hi")
    pid, rest = proc.stdout.split("\n", 1)
    _reap(pid)
    assert proc.returncode == 0 and rest == "hi\n"
    assert "a background process started by the command kept the output open" in proc.stderr


def test_a_large_output_held_open_is_stored_and_the_pointer_says_so(tmp_path: Path) -> None:
    """The stored output is what arrived before the bounded drain ended; the notice names the cause."""
    proc = _run_bounded(tmp_path, "--", "sh", "-c", "sleep 60 & echo $!; seq 1 100000; exit 4")
    _reap(proc.stdout.split("\n", 1)[0])
    assert proc.returncode == 4, proc.stderr
    assert "Note: a background process started by the command kept the output open" in proc.stdout
    stored = ArtifactStore(LocalStore(tmp_path / "store"), session_id=SESSION)
    data = b"".join(stored.iter_verified(source_id_of(proc.stdout)))
    assert data.split(b"\n", 1)[1] == "".join(f"{i}\n" for i in range(1, 100_001)).encode()


def _run_bounded(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`_run` with a timeout far below the background child's 60 s: a hang fails the test."""
    env = child_env({"S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": SESSION})
    try:
        return subprocess.run([sys.executable, "-m", "s3spill", "run", *args], env=env, text=True,
                              capture_output=True, timeout=30)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        _reap(out.split("\n", 1)[0])
        raise


def test_json_carries_the_held_open_note(tmp_path: Path) -> None:
    """`run --json` of a command whose background child holds the pipe: the SpillResult says so."""
    proc = _run_bounded(tmp_path, "--json", "--", "sh", "-c", "sleep 60 & echo $!; echo hi")
    doc = json.loads(proc.stdout)
    pid, rest = doc["context_text"].split("\n", 1)
    _reap(pid)
    assert proc.returncode == 0 and rest == "hi\n"
    assert "background process" in doc["note"]
