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

TYPE_CHECKING = False  # not from typing (~2 ms): the CLI's fast read takes CONTEXT_BYTES from here
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Protocol, TypeVar

    _T = TypeVar("_T")

    class Chunked(Protocol):
        """What :func:`page_as_stored` needs of an index (the reader's and the CLI's fast one)."""

        @property
        def chunk_size(self) -> int: ...
        @property
        def chunk_count(self) -> int: ...

    #: ``keeps(window, first, end)``: does the view of any chunk whose window (the stored text
    #: it is given, ``before + data + after``) is ``window`` show ``window[first:end]`` (whole
    #: lines) as stored? False when it cannot say so cheaply.
    LinesKept = Callable[[bytes, int, int], bool]

    class ChunkView(Protocol):
        """``data`` as shown, same length; ``before``/``after`` are the stored text around it
        (empty at the start/end of the output). ``headless``: ``data`` may start inside a
        structure whose beginning is not in ``before``; ``cut_end``: the stored text goes on
        after ``data`` but is not available yet (a live output's newest line)."""

        def __call__(self, data: bytes, before: bytes = b"", after: bytes = b"", *, headless: bool = False,
                     cut_end: bool = False) -> bytes: ...
else:
    ChunkView = "ChunkView"  # annotations only: a name to import, not a class

__all__ = ["CONTEXT_BYTES", "ChunkView", "around", "lines_kept_by", "page_as_stored", "viewed"]

#: Stored text a view is given on each side of what it shows (a secret, a private key
#: block, is far shorter).
CONTEXT_BYTES = 64 * 1024


def viewed(items: Iterable[tuple[_T, bytes]], view: ChunkView) -> Iterator[tuple[_T, bytes]]:
    """The pieces of a stream, in order, each through ``view`` with up to
    :data:`CONTEXT_BYTES` of its neighbours in sight (one piece of look-ahead, or more
    when pieces are small)."""
    before = b""
    pending: list[tuple[_T, bytes]] = []  # not a deque: ``collections`` is ~3 ms of a CLI grep
    ahead = 0

    def emit() -> tuple[_T, bytes]:
        nonlocal before, ahead
        tag, data = pending.pop(0)
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


def around(chunk_count: int, chunk: Callable[[int], bytes], k: int) -> tuple[bytes, bytes]:
    """The stored text a view is given on each side of chunk ``k`` (up to
    :data:`CONTEXT_BYTES` each, from as many neighbours as that takes); ``chunk(j)``: the
    stored chunk ``j``, verified."""
    before, j = b"", k
    while j > 0 and len(before) < CONTEXT_BYTES:
        j -= 1
        before = chunk(j)[-CONTEXT_BYTES:] + before
    after, j = b"", k
    while j + 1 < chunk_count and len(after) < CONTEXT_BYTES:
        j += 1
        after += chunk(j)[:CONTEXT_BYTES]
    return before[-CONTEXT_BYTES:], after[:CONTEXT_BYTES]


def lines_kept_by(view: object) -> LinesKept | None:
    """The view's own answer to "are these lines shown as stored?" (its ``keeps_lines``), or
    None: a view that says nothing of its lines is applied to whole chunks."""
    keeps: LinesKept | None = getattr(view, "keeps_lines", None)
    return keeps


def page_as_stored(index: Chunked, chunk: Callable[[int], bytes], start: int, covered: int,
                   keeps: LinesKept) -> bool:
    """Does the view show the bytes a page filled from stored chunks used, as they are stored?

    The page covers ``covered`` bytes from ``start`` (a line start: no ``char_offset``), in
    one chunk ``k``; the fill also read the line after them (whether it fits) and counted
    newlines before them, which a view never moves (it keeps every byte's place). So when
    the view keeps those lines (``keeps``, asked with chunk ``k``'s window: the text it is
    given), the page filled from the stored chunks is the one filled from the shown chunks,
    byte for byte, and only those lines need asking about. False when that cannot be said
    this way (an empty page, one that crosses chunks, a next line that goes on in the next
    chunk, or ``keeps`` says no): the shown chunks decide.
    """
    c = index.chunk_size
    k = start // c
    if covered <= 0 or (start + covered - 1) // c != k:
        return False
    data = chunk(k)
    end = data.find(b"\n", start + covered - k * c)  # the end of the next line (or of a cut one)
    if end < 0:
        if k + 1 < index.chunk_count:
            return False  # that line goes on in the next chunk
        end = len(data)
    before, after = around(index.chunk_count, chunk, k)
    window = before + data + after
    first = window.rfind(b"\n", 0, len(before) + start - k * c) + 1  # the page's first line
    return keeps(window, first, len(before) + end)
