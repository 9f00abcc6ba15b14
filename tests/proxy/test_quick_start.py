"""The proxy answers ``initialize`` before it imports the spill path (s3spill/proxy/quick_start.py):
what the upstream says before its answer, an answer only the relay's parser reads, a first
request that is not a handshake and a bad setting all end as they do through the relay."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.proxy.servers import INIT, OURS, RawProxy

LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _names(answer: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in answer["result"]["tools"]]


def test_the_server_s_early_notice_passes_and_an_answer_to_an_id_never_sent_is_dropped(
        raw_proxy: Callable[..., RawProxy]) -> None:
    """A log notification written before the answer reaches the client first; the answer to
    id 99 does not; the handshake gets our capabilities, and the relay takes over after it."""
    proxy = raw_proxy("chatty")
    proxy.send(INIT)
    first = proxy.recv()
    assert first["method"] == "notifications/message"
    answer = proxy.recv()
    assert answer["id"] == "init" and answer["result"]["capabilities"] == {"tools": {}, "resources": {}}
    proxy.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    proxy.send(LIST)
    listed = proxy.recv()
    assert listed["id"] == 2 and _names(listed)[-3:] == OURS
    assert proxy.close() == 0


def test_an_initialize_answer_that_is_not_utf_8_is_answered_by_the_relay(
        raw_proxy: Callable[..., RawProxy]) -> None:
    """The handshake's parser refuses the answer (a raw 0xFF): the relay reads it, under the
    id the handshake sent it with, and answers it as its own."""
    proxy = raw_proxy("oddinit")
    proxy.send(INIT)
    answer = proxy.recv()
    assert answer["id"] == "init" and answer["result"]["capabilities"] == {"tools": {}, "resources": {}}
    proxy.send(LIST)
    assert _names(proxy.recv())[-3:] == OURS
    assert proxy.close() == 0


def test_a_first_request_that_is_not_initialize_is_the_relay_s(raw_proxy: Callable[..., RawProxy]) -> None:
    """tools/list before any handshake: answered as always, our tools on the page."""
    proxy = raw_proxy()
    proxy.send(LIST)
    assert _names(proxy.recv())[-3:] == OURS
    assert proxy.close() == 0


def test_a_bad_setting_is_reported_as_the_cli_reports_it_after_the_handshake(
        raw_proxy: Callable[..., RawProxy]) -> None:
    """--hard-cap under the floor: the handshake is answered, then the one line and exit 2 of
    the full command line."""
    proxy = raw_proxy("", "--hard-cap", "5")
    proxy.send(INIT)
    assert proxy.recv()["id"] == "init"
    assert proxy.proc.wait(60) == 2
    assert proxy.stderr().strip().splitlines()[-1] == (
        "s3spill: ConfigError: invalid proxy setting: ('hard_cap_chars',): Input should be greater "
        "than or equal to 2000")


@pytest.mark.slow
def test_a_client_that_leaves_before_the_upstream_answers_initialize_ends_the_proxy(
        raw_proxy: Callable[..., RawProxy]) -> None:
    """The upstream never answers; the client sends initialize and closes stdin: the relay
    takes the session over and ends it as always (answers drained for up to 10 s, exit 0)."""
    proxy = raw_proxy("noinit")
    proxy.send(INIT)
    time.sleep(0.5)
    started = time.monotonic()
    assert proxy.close(timeout=40) == 0
    assert time.monotonic() - started < 30
