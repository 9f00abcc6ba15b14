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
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

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


def start(cmd: Sequence[str]) -> subprocess.Popen[bytes] | int:
    """The running command, or the shell's exit status when it cannot be started (said on stderr)."""
    try:
        return subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # noqa: S603
    except FileNotFoundError:
        from s3spill.cli.voice import say

        print(say(f"run: command not found: {cmd[0]}", "check its name and $PATH"), file=sys.stderr)
        return EXIT_NOT_FOUND
    except PermissionError:
        from s3spill.cli.voice import say

        print(say(f"run: permission denied: {cmd[0]}", "make it executable: chmod +x"),
              file=sys.stderr)
        return EXIT_NOT_EXECUTABLE


class Pipe:
    """The command's output until EOF, or until a bounded drain after the command exited."""

    def __init__(self, fd: int, proc: subprocess.Popen[bytes]) -> None:
        self.fd = fd
        self.proc = proc
        #: True when the command exited but something else still held the pipe open.
        self.held_open = False

    def note(self) -> str | None:
        return HELD_OPEN_NOTE if self.held_open else None

    def __iter__(self) -> Iterator[bytes]:
        """Chunks as the command produces them (``os.read`` returns what is there)."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            deadline: float | None = None
            while True:
                if deadline is None and self.proc.poll() is not None:
                    deadline = time.monotonic() + DRAIN_MAX
                wait = _POLL if deadline is None else min(DRAIN_IDLE, deadline - time.monotonic())
                if not (wait > 0 and selector.select(wait)):
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
