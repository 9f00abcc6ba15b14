"""The ``s3spill`` command: a thin layer over the library.

Each sub-module registers its own sub-commands (``register(subparsers)``) and sets
``func`` on its parser; this module only parses, configures logging, and is the one
error boundary: every expected failure becomes ``s3spill: error: <what> (<hint>)`` on
stderr and the exit code of :mod:`s3spill.cli.exitcodes` (see :mod:`.failures`); a
traceback only with ``--debug``. Bad arguments are usage errors (exit 2), caught by
argparse before anything touches a store.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from s3spill import log
from s3spill.cli.common import utf8
from s3spill.cli.exitcodes import ExitCode, help_epilog
from s3spill.cli.failures import describe

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

EXIT_ERROR = int(ExitCode.ERROR)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line in the CLI's format (exit 2, no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(int(ExitCode.ERROR), f"s3spill: error: {message} (see `{self.prog} --help`)\n")


def log_level(value: str) -> str:
    level = value.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{value!r}: use one of {', '.join(LOG_LEVELS)}")
    return level


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="s3spill", epilog=help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Spill oversized tool output to immutable, checksummed objects, page it back "
        "through verified reads, and delete only what no reference protects.",
    )
    parser.add_argument("--store", type=utf8, help="store URL: s3://bucket/prefix or file:///path "
                        "(default: $S3SPILL_STORE, else a per-user state directory)")
    parser.add_argument("--session", type=utf8, help="session id (default: $S3SPILL_SESSION)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("--log-level", default="WARNING", type=log_level, metavar="LEVEL",
                        help=f"log level: {', '.join(LOG_LEVELS)} (default WARNING)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    log.configure(level="DEBUG" if args.debug else args.log_level)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_ERROR
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the boundary, not at exit
        return code
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        _silence_stdout()
        return int(ExitCode.BROKEN_PIPE)
    except Exception as exc:
        if args.debug:
            raise
        failure = describe(exc)
        print(failure.line(), file=sys.stderr)
        return int(failure.code)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass
