"""The one shape of every message ``s3spill`` writes to stderr: ``s3spill: WHAT (HINT)``.

Its own module, importing nothing, because the argument parser's usage errors use it
before anything heavier (pydantic, the failure table) is loaded, and the hook's fast path
must stay at the interpreter's start-up cost.
"""

from __future__ import annotations

#: The hint of every "needs the MCP SDK" error (the SDK is the optional ``mcp`` extra).
MCP_EXTRA = "pip install 's3spill[mcp]'"


def say(what: str, hint: str = "") -> str:
    """The line: ``what`` on one line (whatever newlines it held), then the hint, if any."""
    what = " ".join(what.split())
    return f"s3spill: {what} ({hint})" if hint else f"s3spill: {what}"
