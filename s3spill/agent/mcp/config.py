"""Where ``s3spill mcp`` may listen: parsed and checked before the (slow) SDK import.

The HTTP endpoint has no authentication, and the tools it serves read a session's tool
outputs, so the default is loopback and anything else needs an explicit opt-in. On any
loopback address — not only the three the SDK recognises (127.0.0.1, localhost, ::1),
but also 127.0.0.2 and the rest of 127/8 — the SDK's DNS-rebinding protection is on:
a request whose Host or Origin header names another site is refused.
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


#: Host names a loopback server always answers to (with any port).
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def rebinding_allowlist(host: str) -> tuple[list[str], list[str]] | None:
    """``(allowed Host headers, allowed Origins)`` for a loopback bind; None otherwise.

    None means no Host/Origin check: only possible with ``--allow-remote`` on a
    non-loopback address, where the operator has taken responsibility for the endpoint.
    """
    if not is_loopback(host):
        return None
    own = f"[{host}]" if ":" in host else host
    names = list(dict.fromkeys((*_LOOPBACK_NAMES, own)))
    return [f"{name}:*" for name in names], [f"http://{name}:*" for name in names]
