"""What a reader shows of the stored bytes: the bytes themselves, or a view of them.

Why a view at the chunk level: every read path — pages (with ``char_offset`` or not),
hexdumps, JSON and CSV pages, grep's matches and context lines, live windows — is built
from decoded chunks. A view applied to each chunk, with the stored text on both sides of
it in sight, is therefore applied to everything a reader shows, whatever the cut; and
grep then searches what the model could read, so its counts reveal nothing the pages do
not. The view keeps byte lengths, so line numbers, offsets and sizes stay those of the
stored copy. The artifacts layer does not know what a view does: the caller (the model's
tools, the CLI) passes one in (the secret mask, :mod:`s3spill.context.secrets`).
"""

from __future__ import annotations

from collections import deque

TYPE_CHECKING = False  # not from typing (~2 ms): the CLI's fast read takes CONTEXT_BYTES from here
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Protocol, TypeVar

    _T = TypeVar("_T")

    class ChunkView(Protocol):
        """``data`` as shown, same length; ``before``/``after`` are the stored text around it
        (empty at the start/end of the output). ``headless``: ``data`` may start inside a
        structure whose beginning is not in ``before``; ``cut_end``: the stored text goes on
        after ``data`` but is not available yet (a live output's newest line)."""

        def __call__(self, data: bytes, before: bytes = b"", after: bytes = b"", *, headless: bool = False,
                     cut_end: bool = False) -> bytes: ...
else:
    ChunkView = "ChunkView"  # annotations only: a name to import, not a class

__all__ = ["CONTEXT_BYTES", "ChunkView", "viewed"]

#: Stored text a view is given on each side of what it shows (a secret, a private key
#: block, is far shorter).
CONTEXT_BYTES = 64 * 1024


def viewed(items: Iterable[tuple[_T, bytes]], view: ChunkView) -> Iterator[tuple[_T, bytes]]:
    """The pieces of a stream, in order, each through ``view`` with up to
    :data:`CONTEXT_BYTES` of its neighbours in sight (one piece of look-ahead, or more
    when pieces are small)."""
    before = b""
    pending: deque[tuple[_T, bytes]] = deque()
    ahead = 0

    def emit() -> tuple[_T, bytes]:
        nonlocal before, ahead
        tag, data = pending.popleft()
        ahead -= len(data)
        after = b"".join(d for _, d in pending)[:CONTEXT_BYTES]
        shown = view(data, before, after)
        before = (before + data)[-CONTEXT_BYTES:]
        return tag, shown

    for item in items:
        pending.append(item)
        ahead += len(item[1])
        while len(pending) > 1 and ahead - len(pending[0][1]) >= CONTEXT_BYTES:
            yield emit()
    while pending:
        yield emit()
