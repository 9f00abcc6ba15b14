"""What the relay talks to: a channel of JSON-RPC messages, and how a spooled one is sent.

Why a message may be a :class:`~s3spill.spill.json_spool.Spool`: an upstream's answer of
1 GB is one line; held, parsed and encoded it costs ~3x that in memory. The stdio
channel writes a line over :data:`SPOOL_BYTES` to a file as it arrives and hands on the
file; the relay parses its skeleton (long strings as placeholders), spills the one long
text as a stream, and what it sends on is the skeleton's JSON with each placeholder
replaced by the file's bytes (:func:`deliver`), never decoded.
"""

from __future__ import annotations

from typing import Protocol

from s3spill.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported: the handshake is answered before the spill path loads
    from s3spill.spill.json_spool import Spool

__all__ = ["SPOOL_BYTES", "Channel", "Closed", "Drops", "deliver"]

log = get_logger("s3spill.proxy")

#: An upstream line longer than this is spooled to a file instead of held.
SPOOL_BYTES = 8 << 20
#: Dropped upstream messages logged one by one, then one line per this many more.
_DROP_LOG_EVERY = 1000


class Channel(Protocol):
    """One side of the relay: whole JSON-RPC messages as bytes, one line each (the trailing
    newline may be there or not: a channel adds it when it is missing); an upstream's huge
    line may come as a :class:`Spool`."""

    async def receive(self) -> bytes | Spool | None:
        """The next message, or None once the other side has closed."""

    async def send(self, message: bytes) -> None: ...

    async def close(self) -> None:
        """No more messages will be sent (the upstream's stdin is closed, say)."""


class Closed:
    """Stands for a channel before the relay is given the real ones."""

    async def receive(self) -> bytes | None:
        return None

    async def send(self, message: bytes) -> None:
        return None

    async def close(self) -> None:
        return None


class Drops:
    """Counts what the upstream said that is dropped, and logs it without flooding stderr
    (an upstream that sprays must not fill the harness's log)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def __call__(self, event: str, size: int) -> None:
        count = self.counts[event] = self.counts.get(event, 0) + 1
        if count <= 10 or count % _DROP_LOG_EVERY == 0:
            log.warning(event, bytes=size, so_far=count)


async def deliver(channel: Channel, message: bytes, spool: Spool | None) -> None:
    """Send ``message``; with ``spool``, its placeholders become the spooled strings, streamed
    when the channel can write pieces (``send_pieces``), else joined."""
    if spool is None or not spool.longs():
        await channel.send(message)
        return
    send_pieces = getattr(channel, "send_pieces", None)
    if send_pieces is None:
        await channel.send(b"".join(spool.expand(message)))
    else:
        await send_pieces(spool.expand(message))
