"""How `s3spill run` starts its command: signals as a shell leaves them, exit statuses, errors,
one merged stream, and the fast path's handover to the full path."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from s3spill.artifacts.store import ArtifactStore
from s3spill.cli.run_fast import FAST_INLINE_BYTES
from s3spill.store.local import LocalStore
from s3spill.testing import child_env
from tests.spill.outputs import source_id_of

SESSION = "cli-run-spawn"
#: A setting the fast path leaves to the full parser: the whole run takes the full path.
FULL = {"S3SPILL_SEGMENT_BYTES": "1048576"}
PATHS = pytest.mark.parametrize("path", ["fast", "full"])


def _env(tmp_path: Path, path: str = "fast") -> dict[str, str]:
    env = {"S3SPILL_STORE": (tmp_path / "store").as_uri(), "S3SPILL_SESSION": SESSION}
    return child_env({**env, **(FULL if path == "full" else {})})


def _run(tmp_path: Path, *cmd: str, path: str = "fast", timeout: float = 60,
         ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "s3spill", "run", "--", *cmd], env=_env(tmp_path, path),
                          capture_output=True, timeout=timeout)


def _stored(tmp_path: Path, out: bytes) -> bytes:
    stored = ArtifactStore(LocalStore(tmp_path / "store"), session_id=SESSION)
    return b"".join(stored.iter_verified(source_id_of(out.decode())))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@PATHS
def test_the_command_gets_sigpipe_and_sigxfsz_at_their_default(tmp_path: Path, path: str) -> None:
    """Python ignores SIGPIPE and SIGXFSZ; the command starts with neither ignored (as Popen's
    restore_signals had it), so what a shell leaves at the default is at the default."""
    got = _run(tmp_path, "cat", "/proc/self/status", path=path)
    assert got.returncode == 0, got.stderr
    (line,) = [x for x in got.stdout.decode().splitlines() if x.startswith("SigIgn:")]
    ignored = int(line.split()[1], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), sig


def test_a_pipeline_whose_reader_stops_ends_at_once_and_silently(tmp_path: Path) -> None:
    """`yes | head -1`: SIGPIPE ends `yes` at once, with no "Broken pipe" error in the output."""
    started = time.monotonic()
    got = _run(tmp_path, "sh", "-c", "yes | head -1", timeout=30)
    assert (got.returncode, got.stdout, got.stderr) == (0, b"y\n", b"")
    assert time.monotonic() - started < 20


@PATHS
@pytest.mark.parametrize(("sig", "code"), [("TERM", 143), ("KILL", 137), ("HUP", 129), ("SEGV", 139)])
def test_a_signal_is_128_plus_its_number(tmp_path: Path, path: str, sig: str, code: int) -> None:
    """A command killed by signal N exits 128+N, small output or large (handed over), either path."""
    for script in (f"echo hi; kill -{sig} $$", f"seq 1 100000; kill -{sig} $$"):
        got = _run(tmp_path, "sh", "-c", script, path=path)
        assert got.returncode == code, (script, got.stderr)


@PATHS
@pytest.mark.parametrize("code", [0, 1, 2, 125, 255])
def test_the_exit_status_is_the_commands(tmp_path: Path, path: str, code: int) -> None:
    """`exit N` is run's exit status, N up to 255."""
    assert _run(tmp_path, "sh", "-c", f"echo x; exit {code}", path=path).returncode == code


def _not_executable(tmp_path: Path) -> Path:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho never\n")
    script.chmod(0o644)
    return script


def _bad_format(tmp_path: Path) -> Path:
    program = tmp_path / "program"
    program.write_bytes(b"\x7fELF not really a program")
    program.chmod(0o755)
    return program


@PATHS
@pytest.mark.parametrize(("name", "code", "said"), [
    ("no-such-command-s3spill", 127,
     "run: command not found: no-such-command-s3spill (check its name and $PATH)"),
    ("", 127, "run: command not found: (check its name and $PATH)"),
    ("{not_executable}", 126, "run: permission denied: {not_executable} (make it executable: chmod +x)"),
    ("{directory}", 126, "run: permission denied: {directory} (make it executable: chmod +x)"),
    ("{bad_format}", 126, "run: cannot execute: {bad_format}: Exec format error"),
    ("{file_as_directory}", 126, "run: cannot execute: {file_as_directory}: Not a directory"),
])
def test_a_command_that_cannot_start_exits_as_in_a_shell(tmp_path: Path, path: str, name: str, code: int,
                                                         said: str) -> None:
    """Not found 127; not executable, or not a program at all, 126; one line on stderr, no traceback."""
    names = {"not_executable": _not_executable(tmp_path), "directory": tmp_path,
             "bad_format": _bad_format(tmp_path), "file_as_directory": _not_executable(tmp_path) / "x"}
    got = _run(tmp_path, name.format(**names), path=path)
    assert got.returncode == code
    assert got.stderr.decode() == f"s3spill: {said.format(**names)}\n" and got.stdout == b""


def _interleaved(lines: int) -> tuple[str, bytes]:
    """A script writing numbered lines to stdout and stderr in turn, and the merged output."""
    script = f'i=0; while [ $i -lt {lines} ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done'
    return script, b"".join(b"out %d\nerr %d\n" % (i, i) for i in range(lines))


@PATHS
def test_stdout_and_stderr_interleave_in_order_when_stored(tmp_path: Path, path: str) -> None:
    """A large output alternating stdout and stderr lines is stored in the order written."""
    script, expected = _interleaved(6000)
    got = _run(tmp_path, "sh", "-c", script, path=path)
    assert got.returncode == 0, got.stderr
    assert _stored(tmp_path, got.stdout) == expected


def test_stdout_and_stderr_interleave_in_order_when_small(tmp_path: Path) -> None:
    """A small output alternating the two streams is printed as it was written."""
    script, expected = _interleaved(50)
    assert _run(tmp_path, "sh", "-c", script).stdout == expected


@pytest.mark.parametrize("size", [FAST_INLINE_BYTES - 1, FAST_INLINE_BYTES, FAST_INLINE_BYTES + 1,
                                  2 * FAST_INLINE_BYTES, 300_000])
def test_the_handover_at_the_fast_limit_loses_and_repeats_nothing(tmp_path: Path, size: int) -> None:
    """Output in two pieces around the fast path's limit: printed as the full path prints it, and
    when stored, stored byte for byte (nothing lost or read twice at the handover)."""
    first = FAST_INLINE_BYTES - 10
    script = (f"head -c {first} /dev/zero | tr '\\0' a; sleep 0.3; "
              f"head -c {size - first - 1} /dev/zero | tr '\\0' b; echo; exit 5")
    expected = b"a" * first + b"b" * (size - first - 1) + b"\n"
    fast = _run(tmp_path, "sh", "-c", script)
    full = _run(tmp_path, "sh", "-c", script, path="full")
    assert fast.returncode == full.returncode == 5, fast.stderr
    if b"source_id=" in full.stdout:
        assert _stored(tmp_path, fast.stdout) == expected == _stored(tmp_path, full.stdout)
        assert fast.stdout.split(b"stored as")[0] == full.stdout.split(b"stored as")[0]
    else:
        assert fast.stdout == full.stdout == expected and fast.stderr == full.stderr == b""


#: Starts the rest of its argv with SIGINT and SIGQUIT at their defaults, as a terminal's shell
#: starts a foreground job: a caller that ignores them (any job a non-interactive shell put in
#: the background, such as a CI step started with ``&``) hands the ignoring down to run and its
#: command, which then rightly ignore the test's Ctrl-C as the bare command would.
FOREGROUND = ("import os, signal, sys\n"
              "for s in (signal.SIGINT, signal.SIGQUIT): signal.signal(s, signal.SIG_DFL)\n"
              "os.execv(sys.argv[1], sys.argv[1:])")


def _started(tmp_path: Path, path: str) -> tuple[subprocess.Popen[bytes], Path]:
    """`run` of a command that marks its start and then sleeps, in a session of its own."""
    mark = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-c", FOREGROUND, sys.executable, "-m", "s3spill", "run", "--",
                             "sh", "-c", f"echo before; touch {mark}; sleep 30; echo after"],
                            env=_env(tmp_path, path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while not (mark.exists() and _sleep_in_group(proc.pid)):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.02)
    return proc, mark


def _sleep_in_group(pgid: int) -> bool:
    """Whether ``sleep`` runs in the group: a signal sent before its exec could reach the shell
    between commands, which (as every shell waiting on a child that exits normally) carries on
    to the next one, so the test's Ctrl-C would not stop the command: it raced the shell."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            comm, _, rest = stat.read_text().rpartition(")")
            if comm.endswith("(sleep") and int(rest.split()[2]) == pgid:
                return True
    return False


@PATHS
def test_ctrl_c_stops_run_and_the_command(tmp_path: Path, path: str) -> None:
    """SIGINT to the foreground group (a Ctrl-C): run exits 130 at once, no traceback, and the
    command (same group) is stopped too."""
    proc, _ = _started(tmp_path, path)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        _stop_group(proc.pid)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"after" not in out


@PATHS
def test_sigterm_ends_run(tmp_path: Path, path: str) -> None:
    """SIGTERM to run alone ends it at once, by that signal (Python's default)."""
    proc, _ = _started(tmp_path, path)
    try:
        proc.terminate()
        proc.communicate(timeout=20)
    finally:
        _stop_group(proc.pid)
    assert proc.returncode == -signal.SIGTERM


def _stop_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def test_the_command_inherits_stdin(tmp_path: Path) -> None:
    """The command reads run's own stdin (as the bare command would)."""
    got = subprocess.run([sys.executable, "-m", "s3spill", "run", "--", "sh", "-c", "read x; echo got $x"],
                         env=_env(tmp_path), input=b"line\n", capture_output=True, timeout=60)
    assert (got.returncode, got.stdout) == (0, b"got line\n")


def test_a_small_run_imports_neither_subprocess_nor_selectors(tmp_path: Path) -> None:
    """The fast path starts and watches the command without subprocess or selectors (~17 ms of
    imports: locale, re, enum, threading, signal)."""
    probe = ("import sys\nfrom s3spill.cli import main\ncode = main(sys.argv[1:])\nsys.stdout.flush()\n"
             "print(sorted({'subprocess', 'selectors', 'signal', 'threading', 'locale'} & set(sys.modules)))")
    got = subprocess.run([sys.executable, "-c", probe, "run", "--", "sh", "-c", "echo hi; exit 3"],
                         env=_env(tmp_path), capture_output=True, timeout=60, text=True)
    assert got.stdout == "hi\n[]\n", got.stderr
