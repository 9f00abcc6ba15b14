"""The command's side of ``s3spill run``: start it, read its merged output, its exit status.

Kept apart from :mod:`.run_cmds` because :mod:`.run_fast` uses it before anything of the
spill path is imported (stdlib only): a small output is printed at the cost of the
interpreter's start, and the full path takes over the same process and pipe when the
output grows.

``run`` ends when the command itself exits, not when the pipe reaches EOF: a command
that starts a server with ``cmd &`` leaves a background process holding the pipe open,
and waiting for EOF would never return. After the command exits, what is still in the
pipe is drained for a short, bounded time; then the output is what arrived, and the
text says a background process kept the output open.

The command is started with ``os.posix_spawnp`` and watched with ``os.waitpid`` and
``select.poll``, not with :mod:`subprocess` and :mod:`selectors`: importing those two
(``subprocess`` pulls in locale, re, enum, threading, signal, contextlib, warnings) cost
~17 ms of CPU, as much as the interpreter's own start, on every wrapped command
(issue 35). :class:`Process` has what ``run`` used of a ``Popen``. What ``Popen``'s
defaults did, decided one by one:

* stdout and stderr: one pipe (as ``stderr=STDOUT`` had them); its write end is dup'ed onto fds 1
  and 2 in the child (a file action), so both streams keep the order they are written in.
  Both ends are non-inheritable, so the child keeps no other copy and EOF comes when the
  command and whatever it started have closed 1 and 2.
* ``close_fds=True``: not done (``posix_spawn`` cannot close a range before Python 3.13).
  Not needed either: every fd Python opens is non-inheritable (PEP 446), so the command
  gets only what this process itself inherited as inheritable from its parent, which is
  what the bare command would get from that parent (a make jobserver's fds, say).
* ``restore_signals=True``: kept. Python ignores SIGPIPE and SIGXFSZ and an ignored
  signal stays ignored across ``exec``; the child sets both back to the default
  (``setsigdef``), so ``yes | head -1`` inside the command ends as in a shell. The
  numbers come from the C module ``_signal`` (loaded at start-up), not :mod:`signal`,
  whose enums cost ~1 ms.
* stdin, the environment, the working directory, the process group and session, the
  signal mask: inherited, as ``Popen`` left them (a Ctrl-C reaches the command too).
* Errors of ``exec`` (glibc reports them from ``posix_spawnp`` itself, as ``Popen`` did
  through its error pipe): not found 127, any other 126, as in a shell.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stub; the C half of `signal`, loaded already
import os
import sys
import time

TYPE_CHECKING = False  # not imported from typing: the fast path skips that import
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from io import FileIO

#: Exit status when the command cannot be started at all (as in a shell).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
_READ = 256 * 1024
#: After the command exited: stop when the pipe is quiet this long, or after DRAIN_MAX.
DRAIN_IDLE = 0.3
DRAIN_MAX = 2.0
#: While the command runs, how often to look whether it has exited.
_POLL = 0.1
HELD_OPEN_NOTE = ("a background process started by the command kept the output open after the "
                  "command exited; only what arrived until then is captured")
#: What ``Popen(restore_signals=True)`` sets back to the default in the child (Python
#: ignores them; SIGXFZ is a name only some systems have).
RESTORED_SIGNALS = tuple(getattr(_signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ")
                         if hasattr(_signal, name))


class Process:
    """A started command: what ``run`` uses of a ``subprocess.Popen`` (``pid``, ``stdout``,
    ``poll``, ``wait``, ``returncode``), on ``os.waitpid``."""

    def __init__(self, pid: int, stdout: FileIO) -> None:
        self.pid = pid
        #: The read end of the command's merged stdout and stderr.
        self.stdout = stdout
        #: None while it runs; then its exit code, or ``-N`` for a signal ``N`` (as ``Popen``'s).
        self.returncode: int | None = None

    def _reap(self, flags: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): as Popen, 0
                self.returncode = 0
            else:
                if pid == self.pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        """The exit code when the command has exited, else None (does not block)."""
        return self._reap(os.WNOHANG)

    def wait(self) -> int:
        """The exit code, once the command has exited."""
        code = self._reap(0)
        assert code is not None
        return code


def spawn(cmd: Sequence[str]) -> Process:
    """Start ``cmd`` (searched on $PATH) with stdout and stderr on one new pipe; OSError when it
    cannot be executed."""
    read, write = os.pipe()
    try:
        pid = os.posix_spawnp(cmd[0], list(cmd), os.environ,
                              file_actions=[(os.POSIX_SPAWN_DUP2, write, 1), (os.POSIX_SPAWN_DUP2, write, 2)],
                              setsigdef=RESTORED_SIGNALS)
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    return Process(pid, open(read, "rb", buffering=0))


def start(cmd: Sequence[str]) -> Process | int:
    """The running command, or the shell's exit status when it cannot be started (said on stderr)."""
    try:
        if not cmd[0]:  # no $PATH holds it (posix_spawnp would raise ValueError)
            raise FileNotFoundError(cmd[0])
        return spawn(cmd)
    except OSError as exc:
        from s3spill.cli.voice import say

        if isinstance(exc, FileNotFoundError):
            print(say(f"run: command not found: {cmd[0]}", "check its name and $PATH"), file=sys.stderr)
            return EXIT_NOT_FOUND
        if isinstance(exc, PermissionError):
            print(say(f"run: permission denied: {cmd[0]}", "make it executable: chmod +x"), file=sys.stderr)
        else:  # not an executable format, a file as a directory, ...
            print(say(f"run: cannot execute: {cmd[0]}: {exc.strerror or exc}"), file=sys.stderr)
        return EXIT_NOT_EXECUTABLE


class Pipe:
    """The command's output until EOF, or until a bounded drain after the command exited."""

    def __init__(self, fd: int, proc: Process) -> None:
        self.fd = fd
        self.proc = proc
        #: True when the command exited but something else still held the pipe open.
        self.held_open = False

    def note(self) -> str | None:
        return HELD_OPEN_NOTE if self.held_open else None

    def __iter__(self) -> Iterator[bytes]:
        """Chunks as the command produces them (``os.read`` returns what is there)."""
        import select

        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        deadline: float | None = None
        while True:
            if deadline is None and self.proc.poll() is not None:
                deadline = time.monotonic() + DRAIN_MAX
            wait = _POLL if deadline is None else min(DRAIN_IDLE, deadline - time.monotonic())
            if not (wait > 0 and poller.poll(wait * 1000)):
                if deadline is not None:  # exited, and the pipe stays open but quiet (or busy)
                    self.held_open = True
                    return
                continue
            chunk = os.read(self.fd, _READ)
            if not chunk:
                return
            yield chunk


def exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode
