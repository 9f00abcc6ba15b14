"""The requests the proxy has sent upstream, under ids of its own.

Why ids of our own: the client's ids and the answers to them are the client's business,
and an upstream that answered an id it was never sent — by mistake, or on purpose to
answer for the proxy's own read tools — must not reach the client. So every request the
proxy forwards goes out under a fresh integer id of the proxy's; an upstream response is
handed on only when its id is one of those still outstanding, and goes back under the
client's own id. Anything else the upstream says with an id is dropped with a log line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class Sent:
    """One forwarded request: what the answer needs to be understood and handed back."""

    client_id: Any
    method: str
    tool: str = ""
    #: A 2026-07-28 (stateless) request: its result must say ``"resultType": "complete"``.
    modern: bool = False
    cancelled: bool = False
    timer: asyncio.TimerHandle | None = None

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class Outstanding:
    """Proxy id -> :class:`Sent`, and the client's id -> proxy id (for cancellation)."""

    def __init__(self) -> None:
        self._next = 0
        self._by_pid: dict[int, Sent] = {}
        self._by_client: dict[Any, int] = {}

    def add(self, client_id: Any, method: str, tool: str = "", modern: bool = False) -> tuple[int, Sent]:
        self._next += 1
        sent = Sent(client_id, method, tool, modern)
        self._by_pid[self._next] = sent
        self._by_client[client_id] = self._next
        return self._next, sent

    def adopt(self, pid: int, client_id: Any, method: str) -> None:
        """A request sent upstream before the relay ran, under ``pid`` (below every id of ours)."""
        assert pid <= 0
        self._by_pid[pid] = Sent(client_id, method)
        self._by_client[client_id] = pid

    def pop(self, pid: Any) -> Sent | None:
        """The request the upstream answers, or None when ``pid`` is not one we sent."""
        if not isinstance(pid, int) or isinstance(pid, bool):
            return None
        sent = self._by_pid.pop(pid, None)
        if sent is not None:
            sent.disarm()
            if self._by_client.get(sent.client_id) == pid:
                del self._by_client[sent.client_id]
        return sent

    def pid_of(self, client_id: Any) -> int | None:
        return self._by_client.get(client_id)

    def get(self, pid: int) -> Sent | None:
        return self._by_pid.get(pid)

    def drain(self) -> Iterator[Sent]:
        """Every request still outstanding (the upstream is gone: none will be answered)."""
        while self._by_pid:
            _, sent = self._by_pid.popitem()
            sent.disarm()
            yield sent
        self._by_client.clear()

    def __len__(self) -> int:
        return len(self._by_pid)
