"""``s3spill mcp-proxy -- CMD`` started fast: the upstream spawned before anything else, the
handshake relayed (:mod:`s3spill.proxy.quick_start`), then the full CLI's parse and the relay.

A failure of the full parse or of the build (a bad flag, a store that cannot be reached) is
reported exactly as :func:`s3spill.cli.main` reports it, after the handshake.
"""

from __future__ import annotations

import sys

from s3spill.proxy.quick_start import Stopped, early_handshake, ignore_signals
from s3spill.proxy.spawn import discard

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Sequence

    from s3spill.proxy.relay import Relay


def run(argv: Sequence[str], proc: subprocess.Popen[bytes]) -> int:
    """The proxy in front of ``proc``, the upstream :func:`~s3spill.proxy.spawn.quick_command`
    found in ``argv``, started first; its handshake answered before the rest is imported."""
    debug = ["--debug" in argv]
    close: Callable[[], None] | None = None
    try:
        try:
            early = early_handshake(proc)
        except Stopped:
            return 0
        relay, close = _build(argv, proc, debug)
        import asyncio

        from s3spill.proxy.stdio import serve_after

        return asyncio.run(serve_after(relay, proc, early))  # its handlers replace ours
    except (KeyboardInterrupt, Stopped):  # a signal between the phases: a normal end
        return 0
    except BaseException as exc:  # noqa: BLE001 - the CLI's boundary, as in s3spill.cli.main
        return _failed(exc, debug[0])
    finally:
        ignore_signals()
        discard(proc)
        if close is not None:
            from s3spill.cli.proxy_cmds import closing

            closing(close)


def _build(argv: Sequence[str], proc: subprocess.Popen[bytes],
           debug: list[bool]) -> tuple[Relay, Callable[[], None]]:
    """Parse in full and build the relay, after the handshake (see the module's docstring)."""
    from s3spill import log
    from s3spill.cli.parser import build_parser
    from s3spill.cli.proxy_cmds import stdio_relay, upstream_of

    args = build_parser(modules=("s3spill.cli.proxy_cmds",)).parse_args(list(argv))
    debug[0] = bool(args.debug)
    log.configure(level="DEBUG" if args.debug else args.log_level)
    if upstream_of(args) != list(proc.args) or args.http or args.upstream_url:  # type: ignore[arg-type]
        raise RuntimeError("mcp-proxy: the command line was read two ways")
    return stdio_relay(args)


def _failed(exc: BaseException, debug: bool) -> int:
    """What the CLI's boundary would say and return for ``exc`` (argparse printed its own)."""
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else 2
    if debug or not isinstance(exc, Exception):
        raise exc
    from s3spill.cli.failures import describe

    failure = describe(exc)
    print(failure.line(), file=sys.stderr)
    return int(failure.code)
