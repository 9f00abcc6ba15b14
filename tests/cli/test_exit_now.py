"""A read, grep or small run the ``s3spill`` command answered on its fast path ends the process at once
(issue 35)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from s3spill.artifacts.store import ArtifactStore
from s3spill.store.local import LocalStore
from tests.cli.conftest import CliCall, cli_env

#: Runs ``_exit_now(3)`` with whatever the lines before it set up, then says it returned.
EXIT = "import sys\nfrom s3spill.cli import _exit_now\n{setup}\n_exit_now(3)\nprint('returned', flush=True)\n"


def _child(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *argv], capture_output=True, env=cli_env(tmp_path), timeout=60)


def _stored(tmp_path: Path, data: bytes) -> str:
    store = ArtifactStore(LocalStore(tmp_path / "store"), session_id="fast")
    return store.write("fast", [data], "t").source_id


def test_the_command_prints_every_byte_and_its_exit_code(tmp_path: Path, cli: CliCall,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m s3spill`` prints the same page and grep as main() in this process, to a pipe,
    with grep's exit status 1 when nothing matched."""
    sid = _stored(tmp_path, b"".join(b"%06d INFO request handled status=200\n" % i for i in range(40_000)))
    env = cli_env(tmp_path)
    for argv, code in ((["read", sid, "--offset", "20000", "--limit", "2000"], 0),
                       (["grep", sid, "INFO", "--max-matches", "300"], 0), (["grep", sid, "no such"], 1)):
        child = _child(["-m", "s3spill", *argv], tmp_path)
        with monkeypatch.context() as m:
            for name in ("S3SPILL_STORE", "S3SPILL_SESSION"):
                m.setenv(name, env[name])
            here = cli(*argv)
        assert (child.returncode, child.stdout.decode(), child.stderr.decode()) == (code, here[1], "") == (
            here[0], here[1], here[2])
        assert len(child.stdout) > 20 and child.stdout.endswith(b"\n")


def test_it_ends_the_process_with_its_code_when_nothing_is_left_to_do(tmp_path: Path) -> None:
    """No atexit callback, one thread: the process ends there, with what was printed flushed."""
    child = _child(["-c", EXIT.format(setup="sys.stdout.write('page\\n')")], tmp_path)
    assert (child.returncode, child.stdout) == (3, b"page\n")


def test_an_atexit_callback_or_another_thread_keeps_the_usual_exit(tmp_path: Path) -> None:
    """A registered atexit callback still runs, and a running thread is still waited for."""
    atexit = "import atexit\natexit.register(lambda: print('callback ran'))"
    callback = _child(["-c", EXIT.format(setup=atexit)], tmp_path)
    assert (callback.returncode, callback.stdout) == (0, b"returned\ncallback ran\n")
    thread = ("import threading, time\n"
              "threading.Thread(target=lambda: (time.sleep(0.2), print('joined'))).start()")
    joined = _child(["-c", EXIT.format(setup=thread)], tmp_path)
    assert (joined.returncode, joined.stdout) == (0, b"returned\njoined\n")


def test_main_called_by_another_program_returns(tmp_path: Path) -> None:
    """A program that calls main() itself (``python -c``, not the command) gets its return value."""
    sid = _stored(tmp_path, b"one\ntwo\n")
    code = f"import sys\nfrom s3spill.cli import main\nsys.argv[1:] = ['read', {sid!r}]\nprint('got', main())"
    child = _child(["-c", code], tmp_path)
    assert child.returncode == 0 and child.stdout.endswith(b"got 0\n") and b"1\tone" in child.stdout


def test_a_small_run_answered_by_the_command_prints_all_and_keeps_the_exit_code(tmp_path: Path) -> None:
    """``python -m s3spill run`` of a small output ends at once with the command's status, what
    it printed on stdout and stderr flushed to the pipe in order."""
    for script, code in (("printf 'out\\n'; printf 'err\\n' >&2; exit 7", 7), ("seq 1 3000", 0)):
        child = _child(["-m", "s3spill", "run", "--", "sh", "-c", script], tmp_path)
        expected = b"out\nerr\n" if code == 7 else b"".join(b"%d\n" % i for i in range(1, 3001))
        assert (child.returncode, child.stdout, child.stderr) == (code, expected, b"")
