"""One stored frame back to its raw chunk, and the checks a chunk passes before a byte is used.

Split from :mod:`.index` so that the CLI's fast read (:mod:`s3spill.cli.read_fast`), which
builds no :class:`~s3spill.artifacts.index.ArtifactIndex` (a dataclass), verifies each
chunk with the same code and in the same words: its length, its SHA-256 and its newline
count against the index's tables. Standard library only (and the zstd backend, lazily).
"""

from __future__ import annotations

from s3spill.stdlib_light import sha256 as _sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from s3spill.errors import IntegrityError

__all__ = ["check_chunk", "decompress_frame"]


def decompress_frame(frame: bytes, raw_range: tuple[int, int], k: int, source: str) -> bytes:
    """One zstd frame back to its raw chunk; a damaged frame is an IntegrityError."""
    # Lazy, and the C backend alone (:mod:`.zstd_light`): a read of an uncompressed artifact
    # never needs it, and a fresh process's first page does not pay the package's own imports.
    from s3spill.artifacts import zstd_light

    want = raw_range[1] - raw_range[0]
    try:
        raw = zstd_light.decompress(frame, want)
    except zstd_light.ZstdError():
        raise _damaged(f"{source}: chunk {k} is not a valid compressed frame") from None
    return raw


def check_chunk(data: bytes, k: int, raw_range: tuple[int, int], sha256: str, newlines: int,
                source: str) -> bytes:
    """Return ``data`` if it is exactly chunk ``k`` (bytes ``raw_range``, the index's digest and
    newline count); raise :class:`IntegrityError` otherwise."""
    start, end = raw_range
    if len(data) != end - start or _sha256(data).hexdigest() != sha256:
        raise _damaged(f"{source}: chunk {k} (bytes {start}-{end}) does not match its index")
    if data.count(b"\n") != newlines:
        raise _damaged(f"{source}: chunk {k} disagrees with its index's line table")
    return data


def _damaged(message: str) -> IntegrityError:
    """The error of a chunk that fails its check (:mod:`s3spill.errors` loads only then)."""
    from s3spill.errors import IntegrityError

    return IntegrityError(message)
