"""The CLI's parser: every sub-command's flags, their ``S3SPILL_*`` defaults, global flags anywhere.

Kept out of :mod:`s3spill.cli` itself so that importing the package (the console script
does) loads neither argparse nor gettext: the hook's and ``run``'s fast paths
(:mod:`.fastpath`, :mod:`.run_fast`) answer before this module is imported.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

from s3spill._version import __version__
from s3spill.cli.exitcodes import ExitCode, help_epilog

#: Sub-command modules, in help order. Each defines ``register(subparsers)``.
COMMAND_MODULES: tuple[str, ...] = (
    "s3spill.cli.store_cmds",
    "s3spill.cli.demo_cmds",
    "s3spill.cli.gc_args",
    "s3spill.cli.artifact_cmds",
    "s3spill.cli.list_cmds",
    "s3spill.cli.run_cmds",
    "s3spill.cli.live_cmds",
    "s3spill.cli.mcp_cmds",
    "s3spill.cli.proxy_cmds",
    "s3spill.cli.hook_cmds",
    "s3spill.cli.journal_cmds",
    "s3spill.cli.purge_cmds",
    "s3spill.cli.usage_cmds",
    "s3spill.cli.fleet_cmds",
    "s3spill.cli.ui_cmds",
)

#: Where each sub-command lives, so ``s3spill read`` imports the artifact layer only, not
#: GC, boto3 or the agent layer (a read is a short-lived process; start-up is its cost).
#: A command missing here still works: every module is then registered.
COMMAND_HOMES: dict[str, str] = {
    "spill": "s3spill.cli.artifact_cmds", "read": "s3spill.cli.artifact_cmds",
    "grep": "s3spill.cli.artifact_cmds", "ls": "s3spill.cli.list_cmds", "run": "s3spill.cli.run_cmds",
    "doctor": "s3spill.cli.store_cmds", "demo": "s3spill.cli.demo_cmds",
    "serve-s3": "s3spill.cli.demo_cmds",
    "gc": "s3spill.cli.gc_args", "mcp": "s3spill.cli.mcp_cmds",
    "mcp-proxy": "s3spill.cli.proxy_cmds", "hook": "s3spill.cli.hook_cmds",
    "ref": "s3spill.cli.journal_cmds", "journal": "s3spill.cli.journal_cmds",
    "reconcile": "s3spill.cli.journal_cmds", "purge": "s3spill.cli.purge_cmds",
    "stats": "s3spill.cli.usage_cmds", "usage": "s3spill.cli.usage_cmds", "ui": "s3spill.cli.ui_cmds",
    "status": "s3spill.cli.live_cmds", "stop": "s3spill.cli.live_cmds",
    "finish-lost": "s3spill.cli.live_cmds",
    "config": "s3spill.cli.fleet_cmds", "quota": "s3spill.cli.fleet_cmds",
}
_VALUE_OPTIONS = frozenset({"--store", "--session", "--log-level", "--config"})

EXIT_ERROR = int(ExitCode.ERROR)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def help_width() -> int:
    """The width argparse's help formatter takes, ``shutil.get_terminal_size().columns - 2``,
    without importing :mod:`shutil` (and the compression modules it loads): argparse builds a
    formatter for every ``add_argument``, so every command paid that import (issue 35)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    try:
        lines = int(os.environ["LINES"])
    except (KeyError, ValueError):
        lines = 0
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((80, 24))
        if columns <= 0:
            columns = size.columns or 80
    return columns - 2


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line in the CLI's format (exit 2, no usage dump)."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        return self.formatter_class(prog=self.prog, width=help_width())  # type: ignore[call-arg]

    def error(self, message: str) -> NoReturn:
        from s3spill.cli.voice import say

        # argparse says "argument --limit: ..."; the flag alone names it.
        self.exit(int(ExitCode.ERROR),
                  say(message.removeprefix("argument "), f"see `{self.prog} --help`") + "\n")


def log_level(value: str) -> str:
    level = value.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{value!r}: use one of {', '.join(LOG_LEVELS)}")
    return level


#: Flags that name *this call's* subject, not a setting: no environment variable stands
#: for them (a leftover S3SPILL_ALL must never widen `gc plan --session X` to every
#: session, and the demo never takes its store from the environment).
_NOT_SETTINGS = {"help", "version", "offset", "char_offset", "call_id", "txid", "label", "all",
                 "shard", "gc_session", "retain_until", "demo_store", "file", "reason", "since",
                 "background", "finish", "stats_session", "stats_prefix", "ui_bind", "ui_port",
                 "quota_session", "prefix"}
#: Switches that delete for real or lower a safety margin: only an explicit flag on the
#: command line turns them on, never a variable left in some environment.
FLAG_ONLY = {"apply", "force_unverified_deletes", "allow_dangerously_short_ttl", "allow_remote", "no_probe",
             "yes_erase", "all_versions", "show_secrets"}


def env_name(action: argparse.Action) -> str | None:
    """``--orphan-ttl`` -> ``S3SPILL_ORPHAN_TTL``: the variable that sets a flag's default."""
    longs = [o for o in action.option_strings if o.startswith("--")]
    if (not longs or action.dest in _NOT_SETTINGS | FLAG_ONLY
            or action.default is argparse.SUPPRESS):
        return None
    return "S3SPILL_" + longs[0][2:].upper().replace("-", "_")


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser and every sub-command parser below it, depth first."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found.extend(_parsers(child))
    return found


def _globals_everywhere(parser: argparse.ArgumentParser) -> None:
    """Accept the global flags after the sub-command too (``s3spill gc plan --debug``).

    Each sub-command gets a copy whose default is SUPPRESS, so the value given before the
    sub-command survives unless it is given again after it; a sub-command that defines a
    flag of the same name itself (``demo --store``) keeps its own.
    """
    globals_ = [a for a in parser._actions if a.option_strings and a.dest not in _NOT_SETTINGS]
    for child in _parsers(parser)[1:]:
        for action in globals_:
            if any(o in child._option_string_actions for o in action.option_strings):
                continue
            kwargs: dict[str, object] = {"dest": action.dest, "default": argparse.SUPPRESS,
                                         "help": argparse.SUPPRESS}
            if isinstance(action, argparse._StoreTrueAction):
                kwargs["action"] = "store_true"
            else:
                kwargs.update(type=action.type, metavar=action.metavar)
            child.add_argument(*action.option_strings, **kwargs)  # type: ignore[arg-type]


def _defaults_from_env(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Every flag's default may come from ``S3SPILL_<FLAG>`` (see :func:`env_name`).

    A string default goes through the flag's own ``type`` (argparse converts string
    defaults), so an environment value is validated exactly like the flag and a bad one
    is the same usage error. Switches take 1/true/yes/on.
    """
    for p in _parsers(parser):
        for action in p._actions:
            name = env_name(action)
            if name is None or name not in environ or isinstance(action, argparse._AppendAction):
                continue
            value = environ[name]
            if isinstance(action, argparse._StoreTrueAction):
                action.default = value.strip().lower() in {"1", "true", "yes", "on"}
            else:
                action.default = value


def settings_table(parser: argparse.ArgumentParser | None = None) -> list[tuple[str, str, str]]:
    """(variable, flag, commands) for every setting, as the README's table lists them."""
    parser = parser or build_parser(environ={})
    rows: dict[str, tuple[str, set[str]]] = {}
    for p in _parsers(parser):
        command = p.prog.removeprefix("s3spill").strip() or "(all)"
        for action in p._actions:
            name = env_name(action)
            if name is None or isinstance(action, argparse._AppendAction):
                continue
            flag = next(o for o in action.option_strings if o.startswith("--"))
            rows.setdefault(name, (flag, set()))[1].add(command)
    return sorted((name, flag, ", ".join(sorted(cmds))) for name, (flag, cmds) in rows.items())


def command_home(argv: Sequence[str]) -> str | None:
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


def deferred(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A sub-command's ``func``: ``module.name(args)``, with ``module`` imported when it runs.

    Why: building the parser imports every sub-command module (``--help``, a usage error, a
    command without a home in :data:`COMMAND_HOMES`), so a module that registers flags must
    not import the library its commands call; those live in ``module``, loaded for the one
    command that runs (a gc plan does not load the live layer, ``--help`` loads neither).
    """

    def run(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(module), name)(args) or 0)

    run.__qualname__ = run.__name__ = name
    return run


def build_parser(environ: Mapping[str, str] | None = None,
                 modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """The CLI (``modules``' sub-commands); flag defaults come from ``environ`` (``os.environ``)."""
    from s3spill.cli.argtypes import utf8

    parser = Parser(
        prog="s3spill", epilog=help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Spill oversized tool output to immutable, checksummed objects, page it back "
        "through verified reads, and delete only what no reference protects.",
    )
    parser.add_argument("--store", type=utf8, help="store URL: s3://bucket/prefix or file:///path "
                        "(default: $S3SPILL_STORE, else a per-user state directory)")
    parser.add_argument("--session", type=utf8, help="session id (default: $S3SPILL_SESSION)")
    parser.add_argument("--config", metavar="FILE", type=utf8,
                        help="the fleet policy file (TOML; default: $S3SPILL_CONFIG, else "
                        "$XDG_CONFIG_HOME/s3spill/config.toml, else /etc/xdg or /etc; see "
                        "`s3spill config show`)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("--log-level", default="WARNING", type=log_level, metavar="LEVEL",
                        help=f"log level: {', '.join(LOG_LEVELS)} (default WARNING)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(name).register(sub)
    _defaults_from_env(parser, os.environ if environ is None else environ)
    _globals_everywhere(parser)
    return parser
