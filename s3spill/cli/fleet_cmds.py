"""``config show|check`` and ``quota show``: the fleet policy and its counters, without Python.

``config show`` prints the effective value of every key and where it came from (default,
``file:PATH:LINE``, ``env:NAME``, ``flag:--x``), so an operator can see why a session was
capped or masked; ``config check FILE`` is the same check CI runs on a policy before it
ships (exit 2 with every problem, each naming file, line and key). ``quota show`` reads the
counters a quota is enforced on: one session's, or the store prefix's.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from s3spill.cli.argtypes import PREFIX_HELP, session_from_args, store_from_args, tenant_store, utf8
from s3spill.cli.exitcodes import ExitCode
from s3spill.cli.policy_args import policy_from_args
from s3spill.cli.voice import say


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("config", help="the fleet policy: show the effective settings, check a file",
                       description="The fleet policy every entry point reads (TOML; --config, "
                       "$S3SPILL_CONFIG, then the user and system config dirs; S3SPILL_* variables "
                       "per key). See docs/configuration.md.")
    what = p.add_subparsers(dest="config_command", metavar="show|check")
    show = what.add_parser("show", help="every key's effective value and where it came from")
    show.add_argument("--json", action="store_true", help="one JSON document")
    show.set_defaults(func=cmd_show)
    check = what.add_parser("check", help="check one policy file (for CI): exit 2 naming each problem")
    check.add_argument("file", metavar="FILE", type=utf8)
    check.add_argument("--json", action="store_true", help="the problems as JSON")
    check.set_defaults(func=cmd_check)
    p.set_defaults(func=lambda _args: _usage(p))

    q = sub.add_parser("quota", help="what a session or the store prefix has stored, against its quota")
    qwhat = q.add_subparsers(dest="quota_command", metavar="show")
    qshow = qwhat.add_parser("show", help="use vs limit of one session (--session ID) or the prefix")
    who = qshow.add_mutually_exclusive_group()
    who.add_argument("--session", dest="quota_session", metavar="ID", type=utf8,
                     help="this session's counter (default: the global --session, else this directory's)")
    who.add_argument("--prefix", metavar="P", type=utf8, nargs="?", const="",
                     help=f"the store prefix's counters: {PREFIX_HELP} (bare --prefix: the store's own)")
    qshow.add_argument("--json", action="store_true", help="one JSON document")
    qshow.set_defaults(func=cmd_quota_show)
    q.set_defaults(func=lambda _args: _usage(q))


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return int(ExitCode.ERROR)


def cmd_show(args: argparse.Namespace) -> int:
    loaded = policy_from_args(args)
    rows = loaded.rows()
    if args.json:
        doc = {"files": [str(f) for f in loaded.files], "settings": rows}
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
        return 0
    files = ", ".join(str(f) for f in loaded.files) or "none (defaults and variables only)"
    lines = [f"policy files: {files}"]
    width = max(len(r["key"]) for r in rows)
    for r in rows:
        lines.append(f"{r['key']:<{width}}  {_text(r['value']):<14}  {r['origin']}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _text(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def cmd_check(args: argparse.Namespace) -> int:
    from s3spill.errors import PolicyError
    from s3spill.fleet.policy_file import load_policy

    try:
        load_policy(args.file, only_file=True)
    except PolicyError as exc:
        if args.json:
            sys.stdout.write(json.dumps({"file": args.file, "ok": False, "problems": exc.problems}) + "\n")
        else:
            for problem in exc.problems:
                print(say(problem), file=sys.stderr)
        return int(ExitCode.ERROR)
    if args.json:
        sys.stdout.write(json.dumps({"file": args.file, "ok": True, "problems": []}) + "\n")
    else:
        sys.stdout.write(f"{args.file}: ok\n")
    return 0


def cmd_quota_show(args: argparse.Namespace) -> int:
    from s3spill.fleet.quota import prefix_usage, session_usage
    from s3spill.keys import session_hash

    loaded = policy_from_args(args)
    quota = loaded.policy.quota
    if args.prefix is not None:
        scope, limits = "store prefix", (quota.prefix_bytes, quota.prefix_objects)
        with tenant_store(args, args.prefix) as store:
            usage, name = prefix_usage(store, 8), store.url
    else:
        session = args.quota_session or session_from_args(args)
        scope, limits = "session", (quota.session_bytes, quota.session_objects)
        with store_from_args(args) as store:
            usage, name = session_usage(store, session_hash(session)), session
    limit_bytes = int(limits[0]) if limits[0] is not None else None
    doc = {"scope": scope, "name": name, "bytes": usage.net_bytes, "objects": usage.net_objects,
           "stored_bytes": usage.bytes, "freed_bytes": usage.freed_bytes,
           "stored_objects": usage.objects, "freed_objects": usage.freed_objects,
           "limit_bytes": limit_bytes, "limit_objects": limits[1],
           "updated_at": usage.updated_at.isoformat() if usage.updated_at else None}
    if args.json:
        sys.stdout.write(json.dumps(doc) + "\n")
        return 0

    def of(used: int, limit: int | None) -> str:
        return f"{used:,} of {limit:,} ({100 * used / limit:.1f} %)" if limit else f"{used:,} (no limit)"

    sys.stdout.write(f"{scope} {name}\n  bytes    {of(usage.net_bytes, limit_bytes)}\n"
                     f"  objects  {of(usage.net_objects, limits[1])}\n"
                     f"  (stored {usage.bytes:,} bytes in {usage.objects:,} objects; GC freed "
                     f"{usage.freed_bytes:,} bytes, {usage.freed_objects:,} objects)\n")
    return 0
