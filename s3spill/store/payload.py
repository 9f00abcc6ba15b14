"""Turning any body into something a conditional S3 write can send, with bounded memory.

Why bodies are hashed *before* anything is sent: every object carries its full-content
SHA-256 in user metadata, and S3 accepts metadata only when the write starts
(PutObject / CreateMultipartUpload). S3 has no full-object SHA-256 for multipart
uploads (its FULL_OBJECT checksum type exists only for the CRC algorithms; SHA-256 is
COMPOSITE, a digest of part digests), and the alternatives are worse: a later
CopyObject to add metadata changes the ETag and leaves a window where the object has
no digest; a tag can be changed by anyone and costs a second request per HEAD; a
companion object can be orphaned. Also, a 409 on CompleteMultipartUpload obliges the
client to restart the upload and send every part again, so a non-replayable stream
has to be kept somewhere anyway.

So: small bodies (under the multipart threshold) are held in memory; a large body
that is already seekable (a file, a BytesIO) is hashed in a first pass and re-read
for the upload; any other large stream is spooled to an anonymous temporary file
(created 0600 and unlinked at once, so it never has a name) while it is hashed. Memory
stays at one threshold-sized buffer plus one part, whatever the body size. The upload
pass hashes again and refuses to complete if the bytes changed in between.

The exception is a :class:`StreamedBody`: a one-shot stream whose producer has already
measured and hashed what it means (the artifact store hashes every raw byte into its
index, the commit record written *after* the body). A store streams such a body as it
comes — no digest of its own in metadata, no second pass, no spool, no local disk — and
therefore cannot replay it: a write that would need the bytes again fails with
:class:`~s3spill.errors.StreamNotReplayable` and the producer degrades honestly.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from s3spill.store.base import Body, iter_body

_READ = 1024 * 1024


class StreamedBody:
    """A one-shot body whose producer vouches for it: stores stream it without hashing it.

    Iterating yields the producer's chunks once; :attr:`size` counts what was handed out.
    A second iteration is a programming error (the bytes are gone), not a replay.
    """

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._started = False
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        if self._started:
            raise RuntimeError("a StreamedBody can be read only once")
        self._started = True
        for chunk in self._chunks:
            if chunk:
                self.size += len(chunk)
                yield chunk

    def head(self, limit: int) -> tuple[bytes, Iterator[bytes] | None]:
        """Up to ``limit`` bytes from the start, and the rest (None when the body ended first).

        Why: a body that turns out small can still go in one request, replayable from memory.
        """
        chunks = iter(self)
        buffer = bytearray()
        for chunk in chunks:
            buffer += chunk
            if len(buffer) >= limit:
                return bytes(buffer), chunks
        return bytes(buffer), None


@dataclass
class Payload:
    """A body whose size and SHA-256 are known, readable again from the start."""

    size: int
    sha256: str
    #: The whole body when it is below the multipart threshold; None otherwise.
    small: bytes | None = None
    _view: memoryview | None = None
    _file: IO[bytes] | None = None
    _file_start: int = 0
    _owns_file: bool = False

    @property
    def is_multipart(self) -> bool:
        return self.small is None

    def parts(self, part_size: int) -> Iterator[bytes]:
        """Yield the body from its start in ``part_size`` pieces (one piece in memory)."""
        if self.small is not None:
            yield self.small
            return
        if self._view is not None:
            for start in range(0, len(self._view), part_size):
                yield bytes(self._view[start : start + part_size])
            return
        assert self._file is not None
        self._file.seek(self._file_start)
        remaining = self.size
        while remaining > 0:
            piece = _read_exact(self._file, min(part_size, remaining))
            if not piece:
                raise OSError("body shrank while uploading")
            remaining -= len(piece)
            yield piece
        if self._file.read(1):
            raise OSError("body grew while uploading")

    def close(self) -> None:
        if self._owns_file and self._file is not None:
            self._file.close()
        self._file = None


def b64_sha256(data: bytes) -> str:
    """The base64 SHA-256 that S3's ``ChecksumSHA256`` fields carry."""
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


def _read_exact(fh: IO[bytes], n: int) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = fh.read(n - got)
        if not chunk:
            break
        chunks.append(bytes(chunk))
        got += len(chunk)
    return b"".join(chunks)


def _is_seekable(body: Any) -> bool:
    try:
        return bool(body.seekable()) and callable(getattr(body, "tell", None))
    except (AttributeError, ValueError, OSError):
        return False


def prepare(body: Body, threshold: int, spool_dir: str | None = None) -> Payload:
    """Measure and hash ``body``; keep it small in memory or replayable from a file."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        view = memoryview(body).cast("B")
        sha = hashlib.sha256(view).hexdigest()
        if len(view) < threshold:
            return Payload(size=len(view), sha256=sha, small=bytes(view))
        return Payload(size=len(view), sha256=sha, _view=view)
    if _is_seekable(body):
        fh: IO[bytes] = body  # type: ignore[assignment]
        start = fh.tell()
        digest = hashlib.sha256()
        size = 0
        head = bytearray()
        while chunk := fh.read(_READ):
            digest.update(chunk)
            size += len(chunk)
            if size < threshold:
                head += chunk
        if size < threshold:
            return Payload(size=size, sha256=digest.hexdigest(), small=bytes(head))
        return Payload(size=size, sha256=digest.hexdigest(), _file=fh, _file_start=start)
    # A one-shot stream: buffer up to the threshold, spool the rest to an unnamed file.
    digest = hashlib.sha256()
    buffer = bytearray()
    chunks = iter_body(body, _READ)
    for chunk in chunks:
        digest.update(chunk)
        buffer += chunk
        if len(buffer) >= threshold:
            break
    else:
        return Payload(size=len(buffer), sha256=digest.hexdigest(), small=bytes(buffer))
    import tempfile  # only a body past the threshold spools (it loads shutil and the compressors)

    spool = tempfile.TemporaryFile(dir=spool_dir or os.environ.get("S3SPILL_SPOOL_DIR"))  # noqa: SIM115
    try:
        size = len(buffer)
        spool.write(buffer)
        del buffer
        for chunk in chunks:
            digest.update(chunk)
            size += len(chunk)
            spool.write(chunk)
        spool.flush()
    except BaseException:
        spool.close()
        raise
    return Payload(size=size, sha256=digest.hexdigest(), _file=spool, _owns_file=True)
