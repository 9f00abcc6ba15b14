"""Start the upstream server first, before the proxy builds its store and Spiller.

Why first: an MCP server takes its own time to boot (a node server 0.3-0.6 s, a Python one
0.1-0.2 s) and the proxy takes its own to import and build what spills; started one after
the other, the harness's first request waits for the sum, started together for the longer
of the two. This module imports nothing heavy, so the command line starts the upstream
right after parsing its arguments; :class:`~s3spill.proxy.stdio.Spawned` adopts the process
into the event loop later.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from s3spill.errors import ConfigError

#: Flags that mean "not the plain stdio form": the full CLI serves them.
_NOT_HERE = ("--http", "--upstream-url", "-h", "--help", "--version")
#: The variables that set the same (``S3SPILL_<FLAG>``, :func:`s3spill.cli.parser.env_name`).
_NOT_HERE_ENV = ("S3SPILL_HTTP", "S3SPILL_UPSTREAM_URL")
#: Global flags that take a value (it may look like a command name).
_VALUED = frozenset({"--store", "--session", "--log-level", "--config"})


def quick_command(argv: Sequence[str]) -> list[str] | None:
    """The upstream's command line when ``argv`` is the plain stdio form that
    :mod:`~s3spill.proxy.quick_start` serves, else None (the full CLI decides)."""
    tokens = list(argv)
    skip, at = False, None
    for i, arg in enumerate(tokens):
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif arg.startswith("-"):
            if arg == "--":
                return None
        else:
            at = i if arg == "mcp-proxy" else None
            break
    if at is None or "--" not in tokens[at:]:
        return None
    cut = tokens.index("--", at)
    flags = tokens[:cut]
    if any(flag.split("=", 1)[0] in _NOT_HERE for flag in flags) or not tokens[cut + 1:] \
            or any(os.environ.get(name) for name in _NOT_HERE_ENV):
        return None
    return tokens[cut + 1:]


def spawn(command: Sequence[str]) -> subprocess.Popen[bytes]:
    """The upstream, its stdin and stdout pipes ours, its stderr the proxy's own."""
    try:
        return subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,  # noqa: S603 - the operator's own command line
                                stderr=None, bufsize=0)
    except OSError as exc:
        raise ConfigError(f"cannot start the upstream server {command[0]!r}: {exc.strerror or exc}") from None


def discard(proc: subprocess.Popen[bytes]) -> None:
    """Stop an upstream the proxy will not serve after all (a bad setting after the spawn)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
