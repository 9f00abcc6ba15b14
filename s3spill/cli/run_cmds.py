"""``s3spill run``: run a command and print what a model should see of its output.

The command's stdout and stderr are one pipe (:mod:`.run_pipe`), so they arrive
interleaved in the order the command wrote them, and that one stream goes through the
Spiller as it is produced: a small output is printed as it is, a large one is stored
and replaced by a preview plus a pointer. The exit status is the command's own (a
signal ``N`` becomes ``128 + N``, as in a shell), so ``s3spill run`` can wrap a
command inside scripts and agent harnesses without changing their control flow.

How the command is started and read (ending when it exits, a bounded drain after) is
:mod:`.run_pipe`'s. A plain ``run -- CMD`` usually never gets here at first:
:mod:`.run_fast` starts the command before any of this is imported and prints a small
output itself; when the output grows past what it can decide, it hands the running
command, its pipe and the bytes read so far to :func:`continue_run`.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from s3spill.cli.argtypes import session_from_args, store_from_args, utf8
from s3spill.cli.live_cmds import add_background_flags, run_background
from s3spill.cli.policy_args import add_cap_flag, policy_from_args
from s3spill.cli.run_pipe import HELD_OPEN_NOTE, Pipe, Process, exit_status, start
from s3spill.cli.voice import say
from s3spill.log import get_logger

if TYPE_CHECKING:  # the Spiller (pydantic, the store layer) loads when a command runs, not with the parser
    from s3spill.context.policy import SpillPolicy
    from s3spill.store.base import ObjectStore

log = get_logger("s3spill.cli.run")


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
    p.add_argument("--pointer-style", choices=("cli", "tools"), default=None,
                   help="how the pointer says to read the output back: `s3spill read` commands "
                   "(cli, the default: a model with a shell) or read_artifact/grep_artifact tool "
                   "calls (tools: a harness that also serves those tools, e.g. over MCP)")
    add_cap_flag(p)
    p.add_argument("--follow", metavar="DIR", type=Path,
                   help="no CMD: follow DIR/o, the output of a command a harness's shell runs, until "
                   "DIR/rc holds its exit status (the Claude Code PreToolUse wrapper; docs/harnesses.md)")
    p.add_argument("--watch-pid", type=int, metavar="PID",
                   help="with --follow: the shell running the command; gone without DIR/rc means stopped")
    p.add_argument("--harness", choices=("claude-code", "gemini-cli", "codex"),
                   help="the pointer and the limits as that harness's hook uses them (names its MCP tools)")
    p.add_argument("--server", default="s3spill", metavar="NAME",
                   help="with --harness: the name `s3spill mcp` is registered under (default s3spill)")
    add_background_flags(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the command to run, after --")
    p.set_defaults(func=run)


def command(args: argparse.Namespace) -> list[str]:
    cmd = list(args.cmd)
    return cmd[1:] if cmd and cmd[0] == "--" else cmd


def _policy(args: argparse.Namespace) -> SpillPolicy:
    """run's own defaults (or the harness hook's), with the fleet policy's keys on top."""
    if args.harness:
        from s3spill.adapters.harness_hooks import hook_policy

        base = hook_policy(args.harness, args.server)
    else:
        from s3spill.context.policy import SpillPolicy

        base = SpillPolicy(pointer_style="cli")
    return policy_from_args(args).spill_policy(base, args.harness or "run")


def run(args: argparse.Namespace) -> int:
    if args.follow is not None:
        from s3spill.cli.run_follow import follow

        return follow(args, _policy)
    cmd = command(args)
    if not cmd:
        print(say("run: no command given", "usage: s3spill run [--tool NAME] [--json] -- CMD ARGS..."),
              file=sys.stderr)
        return 2
    if args.background:
        return run_background(args, cmd)
    # The spill path loads before the command starts, as when it loaded with this module: a
    # Ctrl-C that lands in the middle of that import (~0.5 s) ended the process by SIGINT, not 130.
    import s3spill.context.policy
    import s3spill.spill.spiller  # noqa: F401

    session = session_from_args(args)
    store = store_from_args(args)
    proc = start(cmd)
    if isinstance(proc, int):
        store.close()
        return proc
    assert proc.stdout is not None
    pipe = Pipe(proc.stdout.fileno(), proc)
    return _spill(args, session, store, proc, pipe, pipe)


def continue_run(args: argparse.Namespace, proc: Process, pipe: Pipe,
                 read: bytes, rest: Iterable[bytes]) -> int:
    """The full path for a command :mod:`.run_fast` started: ``read`` came first, then ``rest``.

    The store is opened only now; :mod:`.run_fast` checked the flags that could make
    opening it a usage error before it started the command. When opening it fails all
    the same, the command has run: its output goes through the Spiller against a store
    that refuses every write, so the model gets the degraded result (bounded head and
    tail, "NOT saved" and why) and the exit status, never an error that hides the output.
    """
    return _spill(args, session_from_args(args), _store_or_stand_in(args), proc, pipe,
                  itertools.chain([read], rest))


def _store_or_stand_in(args: argparse.Namespace) -> ObjectStore:
    try:
        return store_from_args(args)
    except Exception as exc:  # noqa: BLE001 - any failure: the output must still be shown
        from s3spill.spill.upload import describe_error
        from s3spill.store.unopened import UnopenedStore

        log.warning("run.store_unopened", error=describe_error(exc))
        return UnopenedStore(getattr(args, "store", None), describe_error(exc))


def _spill(args: argparse.Namespace, session: str, store: ObjectStore, proc: Process,
           pipe: Pipe, output: Iterable[bytes]) -> int:
    assert proc.stdout is not None
    loaded = policy_from_args(args)
    from s3spill.spill.spiller import Spiller
    from s3spill.usage.recorder import usage_recorder

    with store, Spiller(store, session, _policy(args), quota=loaded.quota(),
                        usage=usage_recorder(store, batch=False)) as spiller:
        try:
            result = spiller.externalize(output, args.tool, args.call_id, exit_code=proc.wait,
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
    return exit_status(returncode)
