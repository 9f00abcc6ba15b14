"""``s3spill run``: run a command and print what a model should see of its output.

The command's stdout and stderr share one pipe (``stderr=STDOUT``), so they arrive
interleaved in the order the command wrote them, and that one stream goes through the
Spiller as it is produced: a small output is printed as it is, a large one is stored
and replaced by a preview plus a pointer. The exit status is the command's own (a
signal ``N`` becomes ``128 + N``, as in a shell), so ``s3spill run`` can wrap a
command inside scripts and agent harnesses without changing their control flow.

``run`` ends when the command itself exits, not when the pipe reaches EOF: a command
that starts a server with ``cmd &`` leaves a background process holding the pipe open,
and waiting for EOF would never return. After the command exits, what is still in the
pipe is drained for a short, bounded time; then the output is what arrived, and the
text says a background process kept the output open.
"""

from __future__ import annotations

import argparse
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator

from s3spill.cli.argtypes import session_from_args, store_from_args, utf8
from s3spill.cli.live_cmds import add_background_flags, run_background
from s3spill.cli.voice import say
from s3spill.context.policy import SpillPolicy
from s3spill.spill.spiller import Spiller

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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run", help="run a command; print its output, or a preview and a pointer when it is large",
        description="Run CMD with stdout and stderr merged, pass the output through the Spiller, "
                    "print the model-facing text, and exit with CMD's exit status.",
    )
    p.add_argument("--tool", default="bash", type=utf8,
                   help="tool name that selects the spill policy (default: bash)")
    p.add_argument("--call-id", type=utf8, help="call id recorded with the stored output")
    p.add_argument("--json", action="store_true", help="print the whole SpillResult as JSON")
    p.add_argument("--pointer-style", choices=("cli", "tools"), default="cli",
                   help="how the pointer says to read the output back: `s3spill read` commands "
                   "(cli, the default: a model with a shell) or read_artifact/grep_artifact tool "
                   "calls (tools: a harness that also serves those tools, e.g. over MCP)")
    add_background_flags(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the command to run, after --")
    p.set_defaults(func=run)


class _Pipe:
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


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print(say("run: no command given", "usage: s3spill run [--tool NAME] [--json] -- CMD ARGS..."),
              file=sys.stderr)
        return 2
    if args.background:
        return run_background(args, cmd)
    session = session_from_args(args)
    store = store_from_args(args)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # noqa: S603
    except FileNotFoundError:
        print(say(f"run: command not found: {cmd[0]}", "check its name and $PATH"), file=sys.stderr)
        return EXIT_NOT_FOUND
    except PermissionError:
        print(say(f"run: permission denied: {cmd[0]}", "make it executable: chmod +x"),
              file=sys.stderr)
        return EXIT_NOT_EXECUTABLE
    assert proc.stdout is not None
    pipe = _Pipe(proc.stdout.fileno(), proc)
    policy = SpillPolicy(pointer_style=args.pointer_style)
    from s3spill.usage.recorder import usage_recorder

    with store, Spiller(store, session, policy, usage=usage_recorder(store, batch=False)) as spiller:
        try:
            result = spiller.externalize(pipe, args.tool, args.call_id, exit_code=proc.wait,
                                         note=pipe.note)
        finally:
            proc.stdout.close()
            returncode = proc.wait()
    if args.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        text = result.context_text
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()
    if pipe.held_open and result.mode == "inline":  # no notice to carry it: say it beside the output
        print(say(f"run: {HELD_OPEN_NOTE}"), file=sys.stderr)
    return _exit_status(returncode)
