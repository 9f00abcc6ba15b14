"""Start the upstream server first, before the proxy builds its store and Spiller.

Why first: an MCP server takes its own time to boot (a node server 0.3-0.6 s, a Python one
0.1-0.2 s) and the proxy takes its own to import and build what spills; started one after
the other, the harness's first request waits for the sum, started together for the longer
of the two. This module imports nothing heavy, so the command line starts the upstream
right after parsing its arguments; :class:`~s3spill.proxy.stdio.Spawned` adopts the process
into the event loop later.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from s3spill.errors import ConfigError


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
