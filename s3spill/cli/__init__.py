"""The ``s3spill`` command: a thin layer over the library.

Each sub-module registers its own sub-commands (``register(subparsers)``) and sets
``func`` on its parser (:mod:`.parser` builds the whole); :func:`main` parses, configures
logging, and is the one error boundary: every expected failure becomes ``s3spill: <what> (<hint>)`` on
stderr and the exit code of :mod:`s3spill.cli.exitcodes` (see :mod:`.failures`); a
traceback only with ``--debug``. Bad arguments are usage errors (exit 2), caught by
argparse before anything touches a store.

Importing this package loads the exit-code table only: argparse, logging, the store layer
and the failure table (which needs pydantic) are imported when a command is parsed, so
the hook's "nothing to do" (:mod:`.fastpath`) and a small ``run`` (:mod:`.run_fast`)
cost about what the interpreter's own start costs. ``TYPE_CHECKING = False`` instead of
importing it from :mod:`typing` saves that import too (mypy reads it the same way), and
``functools`` (with ``collections``, ~3 ms) loads only where a started ``run`` goes on.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from subprocess import Popen
    from typing import TypeVar

    from s3spill.cli.parser import COMMAND_HOMES as COMMAND_HOMES
    from s3spill.cli.parser import COMMAND_MODULES as COMMAND_MODULES
    from s3spill.cli.parser import FLAG_ONLY as FLAG_ONLY
    from s3spill.cli.parser import Parser as Parser
    from s3spill.cli.parser import build_parser as build_parser
    from s3spill.cli.parser import env_name as env_name
    from s3spill.cli.parser import settings_table as settings_table
    from s3spill.cli.run_fast import Started

    _T = TypeVar("_T")

#: The exit codes the fast paths return, as :class:`~s3spill.cli.exitcodes.ExitCode` has
#: them (a test checks): the table's module (an ``IntEnum``) loads only on the full path.
_OK, _INTERRUPTED, _BROKEN_PIPE = 0, 130, 141
#: Names of :mod:`.parser` this package has always exported, imported on first use.
_FROM_PARSER = frozenset({"COMMAND_HOMES", "COMMAND_MODULES", "EXIT_ERROR", "FLAG_ONLY", "LOG_LEVELS",
                          "Parser", "build_parser", "env_name", "log_level", "settings_table"})


def __getattr__(name: str) -> object:
    if name not in _FROM_PARSER:
        raise AttributeError(f"module 's3spill.cli' has no attribute {name!r}")
    from s3spill.cli import parser

    return getattr(parser, name)


def _fast_paths(argv: list[str], program: bool = False) -> int | Started | None:
    """A fast path's exit status, a command ``run``'s fast path started, or None (parse in full).

    ``program``: this process is the ``s3spill`` command (:func:`_as_program`), so a read, a
    grep or a small ``run`` answered here may end it on the spot (:func:`_exit_now`)."""
    if argv == ["--version"]:  # what argparse's version action prints, without every parser
        from s3spill._version import __version__

        sys.stdout.write(f"s3spill {__version__}\n")
        return _OK
    if "hook" in argv:
        from s3spill.cli.fastpath import hook_pass_through

        if hook_pass_through(argv):
            return _OK
    if "mcp-proxy" in argv:  # the upstream first, the handshake before the spill path loads
        from s3spill.proxy.spawn import quick_command, spawn

        upstream = quick_command(argv)
        proc = _spawned(spawn, upstream) if upstream is not None else None
        if proc is not None:
            from s3spill.cli.proxy_fast import run

            return run(argv, proc)
    if "read" in argv or "grep" in argv:  # a page or a grep of a local artifact, nothing unusual
        import gc

        collecting = gc.isenabled()
        gc.disable()  # see _fast_read
        try:
            code = _fast_read(argv)
            if code is not None and program:
                _exit_now(code)
        finally:
            if collecting:
                gc.enable()
        if code is not None:
            return code
    if "run" in argv:
        done = _fast_run(argv)
        if program and isinstance(done, int):  # the command ran and was answered: end as a read does
            _exit_now(done)
        return done
    return None


def _fast_run(argv: list[str]) -> int | Started | None:
    """:func:`~s3spill.cli.run_fast.fast_run`, with the exit codes of an interrupt or a closed pipe."""
    from s3spill.cli.run_fast import fast_run

    return _answered(fast_run, argv)


def _fast_read(argv: list[str]) -> int | None:
    """:func:`~s3spill.cli.read_fast.fast_read` (``read``, ``grep``), with the exit codes of an
    interrupt or a closed pipe.

    Its caller turns the cyclic garbage collector off around it (and on again after, unless the
    process ended): a page's thousands of tuples and strings, freed by their reference counts,
    made it run a young and a middle generation pass, ~2 ms of a 2,000-line read's process, and
    the fast read leaves no cycle for it to find (tests/cli/test_read_fast_gc.py)."""
    from s3spill.cli.read_fast import fast_read

    return _answered(fast_read, argv)


def _answered(fast: Callable[[list[str]], _T], argv: list[str]) -> _T | int:
    """``fast(argv)``; an interrupt or a closed stdout as the exit codes the full path gives them."""
    try:
        return fast(argv)
    except KeyboardInterrupt:
        return _INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return _BROKEN_PIPE


def _as_program() -> bool:
    """Is this process the ``s3spill`` command: the console script or ``python -m s3spill``
    (not a program that calls :func:`main` itself)?"""
    top = sys.modules.get("__main__")
    spec = getattr(top, "__spec__", None)
    if spec is not None:
        return bool(spec.name == "s3spill.__main__")
    return os.path.basename(getattr(top, "__file__", None) or "") in ("s3spill", "s3spill.exe")


def _exit_now(code: int) -> None:
    """End the process with ``code`` now, when nothing is left for the interpreter to do at exit.

    Why: its teardown (every module and object freed, one by one) costs a fresh process
    ~14 ms of CPU on the development VM, ``python -c pass`` included: as much as a page read
    itself (issue 35). It is skipped only when it has nothing to do: stdout and stderr are
    flushed here (an error: the usual exit, which reports it), no ``atexit`` callback is
    registered (logging's, a coverage tool's, the usage recorder's), no other thread runs,
    and the files the read opened are closed already. Returns when any of that fails.
    """
    import atexit

    pending = getattr(atexit, "_ncallbacks", None)  # CPython's; elsewhere: the usual exit
    threading = sys.modules.get("threading")
    if pending is None or pending() or (threading is not None and threading.active_count() > 1):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _spawned(spawn: Callable[[list[str]], Popen[bytes]], command: list[str]) -> Popen[bytes] | None:
    """The upstream started, or None when it cannot be (the full path says why, as always)."""
    from s3spill.errors import ConfigError

    try:
        return spawn(command)
    except ConfigError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    program = argv is None and _as_program()
    argv = sys.argv[1:] if argv is None else list(argv)
    started = _fast_paths(argv, program)
    if isinstance(started, int):
        return started
    from s3spill import log
    from s3spill.cli.exitcodes import ExitCode
    from s3spill.cli.parser import COMMAND_MODULES, EXIT_ERROR, build_parser, command_home
    from s3spill.errors import SourceIdError

    home = command_home(argv)
    parser = build_parser(modules=(home,) if home else COMMAND_MODULES)
    args = parser.parse_args(argv)
    log.configure(level="DEBUG" if args.debug else args.log_level)
    if started is not None:  # the command runs already: the full path continues it
        import functools

        from s3spill.cli.run_cmds import continue_run

        args.func = functools.partial(continue_run, proc=started.proc, pipe=started.pipe,
                                      read=started.read, rest=started.rest)
    if not getattr(args, "func", None):
        parser.print_help()
        return int(ExitCode.OK) if not args.command else EXIT_ERROR
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
        if isinstance(exc, SourceIdError):  # only the CLI knows where its session came from
            from s3spill.cli.argtypes import explain_mismatch

            exc = explain_mismatch(exc, args)
        from s3spill.cli.failures import describe  # the failure table loads on a failure only

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
