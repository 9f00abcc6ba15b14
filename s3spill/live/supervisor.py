"""The detached process behind ``s3spill run --background``: it runs one command into a
live artifact and ends when the command's output is finished.

Why a process of its own: the CLI must return at once (an agent's shell tool is waiting
for it), yet someone has to keep reading the command's pipe, cut segments and write the
heartbeat. The CLI starts this module in a new session (no terminal hang-up reaches it),
reads one line from it — ``READY <live id> <command pid>`` once the state exists and
the command runs, or ``ERROR <message>`` — and exits. This process then lives exactly as
long as the command (and the final commit) does. SIGTERM or SIGINT stops the command
(SIGTERM to its group, SIGKILL after a grace) and still finishes the output.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from s3spill.config import LiveConfig, MiB, TransferConfig
from s3spill.context.secrets import StreamRedactor
from s3spill.errors import S3SpillError
from s3spill.fleet.quota import Quota, QuotaGuard
from s3spill.keys import session_hash
from s3spill.leases.journal import LeaseJournal
from s3spill.live.finish import OnStored
from s3spill.live.run import start_live
from s3spill.store import ObjectStore, open_store

#: Variables the CLI set for the supervisor alone (``MALLOC_ARENA_MAX``), removed again from
#: the command's environment so that it runs in the caller's environment exactly.
DROP_ENV = "S3SPILL_SUPERVISOR_ONLY_ENV"
#: The supervisor's store: S3's smallest parts, two in flight. Its segments are small
#: anyway; only the final copy is multipart, and it is on nobody's path, while the
#: supervisor's memory must stay bounded (benchmarks/live_bench.py measures it).
SUPERVISOR_TRANSFER = TransferConfig(multipart_threshold=5 * MiB, part_size=5 * MiB,
                                     max_concurrency=2)
#: Where the supervisor's own log goes (its stderr is not the CLI's any more); unset: nowhere.
LOG_ENV = "S3SPILL_SUPERVISOR_LOG"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m s3spill.live.supervisor")
    p.add_argument("--store", required=True)
    p.add_argument("--session", required=True)
    p.add_argument("--tool", default="bash")
    p.add_argument("--label")
    p.add_argument("--segment-interval", type=float)
    p.add_argument("--segment-bytes", type=int)
    p.add_argument("--heartbeat-interval", type=float)
    p.add_argument("--max-bytes", type=int)
    p.add_argument("--head-bytes", type=int)
    p.add_argument("--queue-bytes", type=int)
    p.add_argument("--secrets", choices=("off", "preview", "at_rest"), default="preview",
                   help="at_rest: mask the stream before it is stored (the fleet policy's spill.secrets)")
    p.add_argument("--quota", metavar="JSON",
                   help="the fleet policy's quota (a Quota as JSON): the final copy is charged to it")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    return p


def config_from(args: argparse.Namespace) -> LiveConfig:
    knobs = {k: getattr(args, k) for k in ("segment_interval", "segment_bytes", "heartbeat_interval",
                                           "max_bytes", "head_bytes", "queue_bytes")}
    return LiveConfig(**{k: v for k, v in knobs.items() if v is not None})


def _quota_recorder(store: ObjectStore, args: argparse.Namespace) -> OnStored | None:
    """The policy's quota counters, charged with the final copy as a spill's are."""
    if not args.quota:
        return None
    return QuotaGuard(store, session_hash(args.session), Quota.model_validate_json(args.quota)).record


def _detach_stdio() -> None:
    """After READY: the CLI's pipe is closed; stderr goes to the log file, if one is named."""
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    log_path = os.environ.get(LOG_ENV)
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    else:
        os.dup2(devnull, 2)
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        if not cmd:
            raise ValueError("no command given")
        store = open_store(args.store, config=SUPERVISOR_TRANSFER)
        drop = {DROP_ENV, *filter(None, os.environ.get(DROP_ENV, "").split(","))}
        env = {k: v for k, v in os.environ.items() if k not in drop}
        handle = start_live(store, args.session, cmd, args.tool, label=args.label, env=env,
                            mask=StreamRedactor() if args.secrets == "at_rest" else None,
                            config=config_from(args), die_with_parent=True,
                            journal=LeaseJournal(store, args.session, getattr(store, "config", None)),
                            on_stored=_quota_recorder(store, args))
    except (S3SpillError, ValueError, OSError) as exc:
        sys.stdout.write(f"ERROR {type(exc).__name__}: {exc}\n".replace("\n", " ").strip() + "\n")
        sys.stdout.flush()
        return 1
    sys.stdout.write(f"READY {handle.source_id} {handle.pid or 0}\n")
    sys.stdout.flush()
    _detach_stdio()

    def on_signal(signum: int, frame: object) -> None:
        threading.Thread(target=handle.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        state = handle.wait()
    except S3SpillError:
        return 1
    if state is None or state.exit_code is None:
        return 128 + (state.signal or 15) if state is not None and state.signal else 1
    return state.exit_code


if __name__ == "__main__":
    sys.exit(main())
