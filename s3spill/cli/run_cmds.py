"""``s3spill run``: run a command and print what a model should see of its output.

The command's stdout and stderr share one pipe (``stderr=STDOUT``), so they arrive
interleaved in the order the command wrote them, and that one stream goes through the
Spiller as it is produced: a small output is printed as it is, a large one is stored
and replaced by a preview plus a pointer. The exit status is the command's own (a
signal ``N`` becomes ``128 + N``, as in a shell), so ``s3spill run`` can wrap a
command inside scripts and agent harnesses without changing their control flow.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator

from s3spill.cli.argtypes import session_from_args, store_from_args, utf8
from s3spill.cli.live_cmds import add_background_flags, run_background
from s3spill.spill.spiller import Spiller

#: Exit status when the command cannot be started at all (as in a shell).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
_READ = 256 * 1024


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
    add_background_flags(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the command to run, after --")
    p.set_defaults(func=run)


def _read_pipe(fd: int) -> Iterator[bytes]:
    """Chunks as the command produces them (``os.read`` returns what is there)."""
    while chunk := os.read(fd, _READ):
        yield chunk


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print("s3spill run: no command given (usage: s3spill run [--tool NAME] [--json] -- CMD ARGS...)",
              file=sys.stderr)
        return 2
    if args.background:
        return run_background(args, cmd)
    session = session_from_args(args)
    store = store_from_args(args)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # noqa: S603
    except FileNotFoundError:
        print(f"s3spill run: command not found: {cmd[0]}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except PermissionError:
        print(f"s3spill run: permission denied: {cmd[0]}", file=sys.stderr)
        return EXIT_NOT_EXECUTABLE
    assert proc.stdout is not None
    with store, Spiller(store, session) as spiller:
        try:
            result = spiller.externalize(_read_pipe(proc.stdout.fileno()), args.tool, args.call_id,
                                         exit_code=proc.wait)
        finally:
            proc.stdout.close()
            returncode = proc.wait()
    if args.json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        text = result.context_text
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()
    return _exit_status(returncode)
