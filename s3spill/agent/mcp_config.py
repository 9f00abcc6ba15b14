"""Where ``s3spill mcp`` may listen: parsed and checked before the (slow) SDK import.

The HTTP endpoint has no authentication, and the tools it serves read a session's tool
outputs, so the default is loopback and anything else needs an explicit opt-in.
"""

from __future__ import annotations

import ipaddress

from s3spill.errors import ConfigError

DEFAULT_HOST = "127.0.0.1"


def parse_http_address(value: str) -> tuple[str, int]:
    """``PORT``, ``:PORT``, ``HOST:PORT`` or ``[V6]:PORT``; the host defaults to 127.0.0.1."""
    text = value.strip()
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") or DEFAULT_HOST
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--http expects HOST:PORT or PORT, got {value!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless the operator opted in."""
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(f"refusing to serve on non-loopback address {host!r} without "
                          "--allow-remote: the MCP endpoint has no authentication")
