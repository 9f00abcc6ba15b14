"""The ``s3spill`` command: a thin layer over the library.

Each sub-module registers its own sub-commands (``register(subparsers)``) and sets
``func`` on its parser; this module only parses, configures logging, and turns an
:class:`~s3spill.errors.S3SpillError` into one line on stderr and a non-zero exit
(a traceback only with ``--debug``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from s3spill import log
from s3spill.errors import S3SpillError

#: Sub-command modules, in help order. Each defines ``register(subparsers)``.
COMMAND_MODULES: tuple[str, ...] = (
    "s3spill.cli.store_cmds",
    "s3spill.cli.demo_cmds",
    "s3spill.cli.gc_cmds",
    "s3spill.cli.artifact_cmds",
    "s3spill.cli.run_cmds",
    "s3spill.cli.mcp_cmds",
    "s3spill.cli.journal_cmds",
)

#: Where each sub-command lives, so ``s3spill read`` imports the artifact layer only, not
#: GC, boto3 or the agent layer (a read is a short-lived process; start-up is its cost).
#: A command missing here still works: every module is then registered.
COMMAND_HOMES: dict[str, str] = {
    "spill": "s3spill.cli.artifact_cmds", "read": "s3spill.cli.artifact_cmds",
    "grep": "s3spill.cli.artifact_cmds", "run": "s3spill.cli.run_cmds",
    "doctor": "s3spill.cli.store_cmds", "demo": "s3spill.cli.demo_cmds",
    "gc": "s3spill.cli.gc_cmds", "mcp": "s3spill.cli.mcp_cmds",
    "ref": "s3spill.cli.journal_cmds", "journal": "s3spill.cli.journal_cmds",
    "reconcile": "s3spill.cli.journal_cmds",
}
_VALUE_OPTIONS = frozenset({"--store", "--session", "--log-level"})

EXIT_ERROR = 2


def _command_home(argv: Sequence[str]) -> str | None:
    """The module of the sub-command ``argv`` names, if it is a known one."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in _VALUE_OPTIONS:
            skip = True
        elif not token.startswith("-"):
            return COMMAND_HOMES.get(token)
    return None


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="s3spill",
        description="Spill oversized tool output to immutable, checksummed objects, page it back "
        "through verified reads, and delete only what no reference protects.",
    )
    parser.add_argument("--store", help="store URL: s3://bucket/prefix or file:///path "
                        "(default: $S3SPILL_STORE, else a per-user state directory)")
    parser.add_argument("--session", help="session id (default: $S3SPILL_SESSION)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("--log-level", default="WARNING", help="structlog level (default WARNING)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    home = _command_home(argv)
    parser = build_parser((home,) if home else COMMAND_MODULES)
    args = parser.parse_args(argv)
    log.configure(level="DEBUG" if args.debug else args.log_level)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_ERROR
    try:
        return int(args.func(args) or 0)
    except S3SpillError as exc:
        if args.debug:
            raise
        print(f"s3spill: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
