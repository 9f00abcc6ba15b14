"""``s3spill run --follow DIR``: the output of a command that a harness's shell runs itself.

The Claude Code ``PreToolUse`` wrapper (:mod:`s3spill.adapters.claude_bash`) runs the
command in the harness's own shell with its output appended to ``DIR/o``; this side
follows that file as it grows (a file, so the command never blocks on us), and stops when:

* ``DIR/rc`` appears (the shell wrote the command's exit status): what is still being
  appended is drained for a short, bounded time — a background process the command
  started may keep writing — then the output is what arrived;
* the shell (``--watch-pid``) is gone without writing ``DIR/rc``: the harness stopped it
  (a timeout, an interrupt); the output is what arrived, and the notice says so.

Then the model-facing text is printed exactly (no newline added), and ``DIR/done`` is
written. With ``--harness``, an output that ended within :data:`HOOK_FLOOR_BYTES` (under
every threshold of the hook's policy) and that the Spiller would print unchanged (the
test of ``s3spill run``'s own fast path, :func:`s3spill.cli.run_fast.inline_as_is`: text,
nothing a secret rule could flag) is printed as it is, without loading the Spiller or the
store; most commands are small. Either way ``DIR/done`` is then written: the shell's
signal that the text is out. A ``run`` that fails writes no ``done``, and the shell prints
the raw spool instead (fail open).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from s3spill.cli.fastpath import HOOK_FLOOR_BYTES
from s3spill.cli.run_fast import inline_as_is

#: How long to sleep when the spool has nothing new.
_POLL = 0.02
_READ = 256 * 1024
#: After the exit status arrived: stop when the spool is quiet this long (the
#: command itself has written everything by then), or after DRAIN_MAX.
DRAIN_IDLE = 0.05
DRAIN_MAX = 2.0
HELD_OPEN = ("a background process started by the command kept writing after the command exited; "
             "only what arrived until then is captured")
STOPPED = ("the shell running the command was stopped before the command ended (a timeout or an "
           "interrupt); only what arrived until then is captured")


def _alive(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Follow:
    """The chunks of ``DIR/o`` as they are appended, until the command's end."""

    def __init__(self, directory: Path, watch_pid: int | None) -> None:
        self.directory = directory
        self.watch_pid = watch_pid
        self.exit_code: int | None = None
        self.ending: str | None = None

    def note(self) -> str | None:
        return self.ending

    def status(self) -> int | None:
        return self.exit_code

    def _ended(self) -> bool:
        """Has the shell written the exit status (read into ``exit_code``)?"""
        try:
            text = (self.directory / "rc").read_text().strip()
        except FileNotFoundError:
            return False
        if not text:
            return False  # being written: look again
        self.exit_code = int(text) if text.lstrip("-").isdigit() else None
        return True

    def __iter__(self) -> Iterator[bytes]:
        with open(self.directory / "o", "rb", buffering=0) as spool:
            deadline: float | None = None
            quiet_since: float | None = None
            while True:
                chunk = spool.read(_READ)
                now = time.monotonic()
                if chunk:
                    quiet_since = None
                    yield chunk
                    continue
                if deadline is None:
                    if self._ended():
                        deadline = now + DRAIN_MAX
                    elif not _alive(self.watch_pid):
                        self.ending = STOPPED
                        yield from iter(lambda: spool.read(_READ), b"")
                        return
                if deadline is not None:
                    quiet_since = quiet_since or now
                    if now - quiet_since >= DRAIN_IDLE:
                        return
                    if now >= deadline:
                        self.ending = HELD_OPEN
                        return
                time.sleep(_POLL)


def follow(args: argparse.Namespace, policy: Callable[[argparse.Namespace], Any]) -> int:
    """``--follow DIR``: spill what the harness's shell appends to DIR/o; ``DIR/done`` once printed."""
    followed = Follow(args.follow, args.watch_pid)
    chunks = iter(followed)
    head = bytearray()
    small = HOOK_FLOOR_BYTES if args.harness else -1
    for chunk in chunks:
        head += chunk
        if len(head) > small:
            break
    if len(head) <= small and inline_as_is(bytes(head)):
        sys.stdout.buffer.write(head)
        sys.stdout.flush()
        (args.follow / "done").touch()
        return 0
    from s3spill.cli.argtypes import session_from_args, store_from_args
    from s3spill.spill.spiller import Spiller
    from s3spill.usage.recorder import usage_recorder

    output = itertools.chain([bytes(head)], chunks)
    from s3spill.cli.policy_args import policy_from_args

    with store_from_args(args) as store, Spiller(store, session_from_args(args), policy(args),
                                                 quota=policy_from_args(args).quota(),
                                                 usage=usage_recorder(store, batch=False)) as spiller:
        result = spiller.externalize(output, args.tool, args.call_id, exit_code=followed.status,
                                     note=followed.note)
    sys.stdout.write(result.context_text)
    sys.stdout.flush()
    (args.follow / "done").touch()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m s3spill.cli.run_follow``: ``s3spill [--store U] [--session S] run --follow DIR …``
    without the full CLI's parser and imports (what the wrapper starts for every Bash call)."""
    p = argparse.ArgumentParser(prog="s3spill-run-follow")
    p.add_argument("--store")
    p.add_argument("--session")
    p.add_argument("--harness", choices=("claude-code", "gemini-cli", "codex"))
    p.add_argument("--server", default="s3spill")
    p.add_argument("--tool", default="Bash")
    p.add_argument("--call-id")
    p.add_argument("--follow", type=Path, required=True)
    p.add_argument("--watch-pid", type=int)
    args = p.parse_args(argv)

    def policy(ns: argparse.Namespace) -> Any:
        from s3spill.adapters.harness_hooks import hook_policy
        from s3spill.context.policy import SpillPolicy

        return hook_policy(ns.harness, ns.server) if ns.harness else SpillPolicy()

    return follow(args, policy)


if __name__ == "__main__":
    sys.exit(main())
