"""Shared setup of the proxy tests: the proxy in front of the hostile upstream, driven raw."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.proxy.servers import RawProxy, proxy_command

HOSTILE = Path(__file__).resolve().parent / "hostile_upstream.py"
SESSION = "proxy-tests"


def hostile_command(record: Path, modes: str = "") -> list[str]:
    return [sys.executable, str(HOSTILE), str(record), modes]


@pytest.fixture
def raw_proxy(tmp_path: Path) -> Iterator[Callable[..., RawProxy]]:
    """Start the proxy in front of the hostile upstream: ``raw_proxy(modes, *proxy_flags)``."""
    started: list[RawProxy] = []

    def start(modes: str = "", *flags: str, upstream: list[str] | None = None) -> RawProxy:
        record = tmp_path / f"upstream-{len(started)}.jsonl"
        record.touch()
        command = proxy_command((tmp_path / "store").as_uri(), SESSION,
                                upstream or hostile_command(record, modes), *flags)
        proxy = RawProxy(command, record, tmp_path / f"proxy-{len(started)}.err")
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        if proxy.proc.poll() is None:
            proxy.proc.kill()
            proxy.proc.wait(10)
