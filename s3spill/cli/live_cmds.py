"""``run --background``, ``status`` and ``stop``: commands whose output is readable while they run.

``s3spill run --background -- CMD`` starts a detached supervisor
(:mod:`s3spill.live.supervisor`), prints the live id (``live:...``) as soon as the
command runs, and returns. ``s3spill read``/``grep`` accept that id at any time (with
``--since BYTES`` for only what is new); ``status`` says how the run stands and, with
``--finish``, completes one whose supervisor died; ``stop`` ends it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from s3spill.cli.argtypes import session_from_args, store_from_args, utf8
from s3spill.cli.artifact_cmds import add_show_secrets
from s3spill.errors import StoreUnavailable

if TYPE_CHECKING:  # pydantic and the live layer load when a command runs, not with the parser
    from s3spill.config import LiveConfig
    from s3spill.store.base import ObjectStore

#: How long ``run --background`` waits for the supervisor to say READY.
START_TIMEOUT = 60.0
_KNOBS = ("segment_interval", "segment_bytes", "heartbeat_interval", "max_bytes", "head_bytes", "queue_bytes")


def add_background_flags(p: argparse.ArgumentParser) -> None:
    """The ``run`` flags of the background mode (registered by :mod:`s3spill.cli.run_cmds`)."""
    p.add_argument("--background", action="store_true",
                   help="start CMD detached and print its live id at once; read and grep it while"
                        " it runs, see `s3spill status` and `s3spill stop`")
    p.add_argument("--label", type=utf8, help="a short title kept with a background output")
    p.add_argument("--segment-interval", type=float, metavar="SECONDS",
                   help="background: cut a readable segment at least this often (default 1)")
    p.add_argument("--segment-bytes", type=int, metavar="BYTES",
                   help="background: ...or once this many bytes arrived (default 1 MiB)")
    p.add_argument("--heartbeat-interval", type=float, metavar="SECONDS",
                   help="background: rewrite the state at least this often (default 5)")
    p.add_argument("--max-bytes", type=int, metavar="BYTES",
                   help="background: size cap; past it the head and the newest output are kept"
                        " (default 4 GiB)")


def background_config(args: argparse.Namespace) -> LiveConfig:
    """The background run's knobs: the fleet policy's ``[live]`` (flags on top), and its cap —
    the one cap of the policy for this tool (``spill.max_stored_bytes``), narrowed by
    ``--max-bytes`` — with the head clamped under it (:class:`~s3spill.config.LiveConfig`)."""
    from s3spill.cli.policy_args import policy_from_args
    from s3spill.config import LiveConfig
    from s3spill.context.policy import SpillPolicy

    loaded = policy_from_args(args)
    cap = loaded.spill_policy(SpillPolicy(), "run").stored_cap(args.tool)
    if args.max_bytes is not None:
        cap = min(cap, args.max_bytes)
    return LiveConfig(**{**loaded.live_config().model_dump(), "max_bytes": cap})


def reader_config(args: argparse.Namespace) -> LiveConfig:
    """What ``status``, ``stop`` and ``finish-lost`` judge by (``lost_after``): the policy's."""
    from s3spill.cli.policy_args import policy_from_args

    return policy_from_args(args).live_config()


def run_background(args: argparse.Namespace, cmd: list[str]) -> int:
    session = session_from_args(args)
    store = store_from_args(args)
    argv = [sys.executable, "-m", "s3spill.live.supervisor", "--store", store.url,
            "--session", session, "--tool", args.tool]
    if args.label:
        argv += ["--label", args.label]
    config = background_config(args)
    for knob in _KNOBS:
        argv += [f"--{knob.replace('_', '-')}", str(getattr(config, knob))]
    from s3spill.cli.policy_args import policy_from_args

    argv += ["--secrets", policy_from_args(args).policy.spill.secrets]  # the one policy: at_rest too
    quota = policy_from_args(args).quota()
    if quota is not None:  # the final copy counts against the session's quota like a spill
        argv += ["--quota", quota.model_dump_json()]
    # glibc gives each thread its own malloc arena and keeps what it frees there: for the
    # supervisor's reader, pump and upload threads that is tens of MiB of RSS; two arenas
    # keep it bounded. The command gets the caller's environment as it was.
    env = dict(os.environ)
    only_ours = []
    if "MALLOC_ARENA_MAX" not in env:
        env["MALLOC_ARENA_MAX"] = "2"
        only_ours.append("MALLOC_ARENA_MAX")
    kms = policy_from_args(args).policy.store.kms_key_id
    if kms and "S3SPILL_KMS_KEY_ID" not in env:  # the policy's tenant key reaches the supervisor's store
        env["S3SPILL_KMS_KEY_ID"] = kms
        only_ours.append("S3SPILL_KMS_KEY_ID")
    if only_ours:
        from s3spill.live.supervisor import DROP_ENV

        env[DROP_ENV] = ",".join(only_ours)
    proc = subprocess.Popen(  # noqa: S603 - our own module; the command is the user's
        [*argv, "--", *cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True, env=env)
    assert proc.stdout is not None
    line = _read_line(proc, START_TIMEOUT)
    proc.stdout.close()
    if not line.startswith("READY "):
        detail = line.removeprefix("ERROR ").strip() or "it exited without saying why"
        raise StoreUnavailable(f"the background run did not start: {detail}",
                               hint="the command was not started" if line.startswith("ERROR ")
                               else None)
    _, live_id, pid = line.split()
    if pid == "0":  # the command could not be started: say so, with its exit status
        return _not_started(args, store, session, live_id)
    if args.json:
        sys.stdout.write(json.dumps({"source_id": live_id, "supervisor_pid": proc.pid,
                                     "command_pid": int(pid)}) + "\n")
    else:
        sys.stdout.write(
            f"{live_id}\nrunning in the background (pid {pid}); its output so far: "
            f"`s3spill read {live_id}` (--since BYTES: only what is new), "
            f"`s3spill grep {live_id} PATTERN`; `s3spill status {live_id}`, "
            f"`s3spill stop {live_id}`\n")
    return 0


def _not_started(args: argparse.Namespace, store: ObjectStore, session: str, live_id: str) -> int:
    """The supervisor stored why the command did not start; print that and its exit status."""
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.live.reader import LiveReader

    arts = ArtifactStore(store, session_id=session)
    reader = LiveReader.over(arts)
    deadline = time.monotonic() + START_TIMEOUT
    summary = reader.status(live_id)
    while summary.status == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
        summary = reader.status(live_id)
    why = "".join(ln.text for ln in reader.read_page(live_id, limit=1).lines)
    code = summary.exit_code if summary.exit_code is not None else 127
    if args.json:
        sys.stdout.write(json.dumps({"source_id": live_id, "exit_code": code, "error": why}) + "\n")
    else:
        sys.stdout.write(f"{live_id}\n{why}\n")
    return code


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    import selectors

    assert proc.stdout is not None
    buf = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while b"\n" not in buf and time.monotonic() < deadline:
            if sel.select(timeout=max(0.0, deadline - time.monotonic())):
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                buf += chunk
    return buf.decode("utf-8", "replace").split("\n", 1)[0]


def cmd_status(args: argparse.Namespace) -> int:
    from s3spill import keys
    from s3spill.context.secrets import redact_text
    from s3spill.live.finish import finish_live
    from s3spill.live.reader import LiveReader

    session = session_from_args(args)
    store = store_from_args(args, create=False)
    if args.finish:
        from s3spill.cli.policy_args import policy_from_args
        from s3spill.fleet.quota import QuotaGuard

        quota = policy_from_args(args).quota()
        guard = QuotaGuard(store, keys.session_hash(session), quota) if quota is not None else None
        finish_live(store, session, keys.LiveId.parse(args.live_id), config=reader_config(args),
                    on_stored=guard.record if guard is not None else None)
    summary = LiveReader(store, session, config=reader_config(args)).status(args.live_id)
    if args.json:
        text = summary.model_dump_json() + "\n"
    else:
        hint = ""
        if summary.status == "lost" and summary.final_source_id is None:
            hint = (f"\nits supervisor died; `s3spill status {args.live_id} --finish` stores what"
                    " it committed")
        text = summary.line() + hint + "\n"
    sys.stdout.write(text if args.show_secrets else redact_text(text)[0])  # a note may quote output
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from s3spill.live.reader import LiveReader
    from s3spill.live.run import request_stop

    session = session_from_args(args)
    store = store_from_args(args, create=False)
    request_stop(store, session, args.live_id)
    reader = LiveReader(store, session, config=reader_config(args))
    deadline = time.monotonic() + args.wait
    summary = reader.status(args.live_id)
    while summary.final_source_id is None and summary.status != "lost" and (
            time.monotonic() < deadline):
        time.sleep(0.2)
        summary = reader.status(args.live_id)
    sys.stdout.write((summary.model_dump_json() if args.json else summary.line()) + "\n")
    return 0


def cmd_finish_lost(args: argparse.Namespace) -> int:
    from s3spill import keys
    from s3spill.live.finish import finish_lost

    store = store_from_args(args, create=False)
    session = getattr(args, "session", None) or os.environ.get("S3SPILL_SESSION")
    shash = keys.session_hash(session) if session else None
    done = finish_lost(store, older_than=args.older_than, session_hash=shash, config=reader_config(args))
    if args.json:
        sys.stdout.write(json.dumps([{"live_id": str(s.live_id), "status": s.status,
                                      "source_id": s.final_source_id} for s in done]) + "\n")
    else:
        for s in done:
            sys.stdout.write(f"{s.live_id}: {s.status}, stored as {s.final_source_id}\n")
        sys.stdout.write(f"{len(done)} live output(s) finished\n")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("status", help="how a background run stands (live id from `run --background`)")
    p.add_argument("live_id", metavar="LIVE_ID", type=utf8)
    p.add_argument("--finish", action="store_true",
                   help="complete a run whose supervisor died (heartbeat expired): store what it"
                        " committed as an ordinary artifact")
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    add_show_secrets(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("stop", help="stop a background run (SIGTERM, then SIGKILL) and wait for its end")
    p.add_argument("live_id", metavar="LIVE_ID", type=utf8)
    p.add_argument("--wait", type=float, default=15.0, metavar="SECONDS",
                   help="how long to wait for the output to be stored (default 15)")
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(func=cmd_stop)

    p = sub.add_parser(
        "finish-lost", help="store what dead background runs committed (a batch job beside GC)",
        description="Finish every live output whose supervisor is gone (no heartbeat for"
                    " --older-than seconds): its committed segments become an ordinary artifact,"
                    " which GC then judges by its TTLs. GC itself never deletes live output."
                    " With --session (or $S3SPILL_SESSION), only that session's.")
    p.add_argument("--older-than", type=float, default=3600.0, metavar="SECONDS",
                   help="how long a heartbeat must be silent (default 3600)")
    p.add_argument("--json", action="store_true", help="print the finished outputs as JSON")
    p.set_defaults(func=cmd_finish_lost)
