"""Writing an artifact: one pass over the stream, created once, committed by its index.

Write protocol (why it looks like this)
---------------------------------------
An artifact is two create-once objects: the body at ``artifacts/<name>`` and its sidecar
index at ``artifacts/<name>.idx`` (:mod:`s3spill.artifacts.index`), the artifact's
*commit record*. The name is generated (timestamp, 6 random bytes, a tool token); the key
derives only from the trusted store root, the hashed session id and that name.

1. **One pass, no spool.** The stream (bytes, a binary file, or an iterable of chunks —
   e.g. the Spiller's tee) is consumed exactly once by a
   :class:`~s3spill.artifacts.frames.FrameEncoder`: full SHA-256, per-chunk SHA-256, line
   and character tables, summary, and one stored *frame* per chunk (zstd for text, see
   :func:`~s3spill.artifacts.frames.choose_codec`). The frames go straight to the object
   store as a :class:`~s3spill.store.payload.StreamedBody`, which the store streams
   without hashing it again (S3: parallel multipart parts; local: one temporary file).
2. **Create the body** with ``put_if_absent(<name>)``; its metadata says its digest lives
   in the commit record (:data:`~s3spill.store.commit.META_COMMIT`). Losing the name means
   two writers drew the same one: an output that fitted in memory (under
   ``multipart_threshold``) is simply written again under a fresh name; a large one-shot
   stream cannot be read twice, so the write fails (the Spiller degrades honestly).
3. **Commit** by creating the index with ``put_if_absent(<name>.idx)``: it carries the
   full SHA-256, size, per-chunk digests and frame table, and pins the body's ETag.

Why the body comes first now: the full SHA-256 and the chunk table are known only at
the end of the stream, and S3 fixes an object's metadata when its upload *starts*; the
older order (index first, body pinning its digest) forced a spool of the whole output to
local disk and a second pass over it. A reader trusts the index it fetched because the
index names the body's ETag (an overwritten body fails before a byte is used) and every
frame is checked against the raw SHA-256 of its chunk. Version 1 artifacts (index first,
pinned by ``META_INDEX_SHA256`` in the body's metadata, raw body) are still read.

Why no inline index for small artifacts: S3 caps user metadata at 2 KB, and one
verification path for every size is easier to get right (and for GC and the doctor to
reason about). The price is one small extra GET per cold read; the index is cached.

A crash between steps 2 and 3 leaves a body without an index: uncommitted, unreadable
(a reader reports it as not found), with no known content digest, so nothing can claim it.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime

from s3spill import keys
from s3spill.artifacts.frames import SNIFF_BYTES as _SNIFF
from s3spill.artifacts.frames import FrameEncoder, choose_codec
from s3spill.artifacts.index import ArtifactIndex, OutputKind
from s3spill.config import TransferConfig
from s3spill.errors import AlreadyExists, IntegrityError
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.store.base import Body, ObjectStore, iter_body
from s3spill.store.commit import COMMIT_SIDECAR, META_COMMIT
from s3spill.store.payload import StreamedBody

#: A tool call's id, or a callable asked for it once the stream has been stored.
CallId = str | Callable[[], str | None] | None

__all__ = ["MAX_NAME_ATTEMPTS", "ArtifactWriter", "reference_of"]

log = get_logger("s3spill.artifacts.store")

#: How many fresh names a write tries before giving up (each loss is a real collision).
MAX_NAME_ATTEMPTS = 8
#: Indexes a writer remembers having committed (for its own use, never for reads).
_WRITTEN_CACHE_SIZE = 64


def _peek(chunks: Iterator[bytes], limit: int) -> tuple[list[bytes], Iterator[bytes] | None]:
    """The first chunks, up to ``limit`` bytes, and the rest (None when they ended first)."""
    head: list[bytes] = []
    size = 0
    for chunk in chunks:
        head.append(chunk)
        size += len(chunk)
        if size >= limit:
            return head, chunks
    return head, None


def reference_of(index: ArtifactIndex) -> ArtifactReference:
    """The :class:`ArtifactReference` an index commits to (the writer's answer, a reader's rebuild)."""
    sid = keys.SourceId(index.session_hash, index.name, index.sha256[:16])
    return ArtifactReference(
        source_id=str(sid), session_hash=index.session_hash, name=index.name,
        size_bytes=index.size_bytes, line_count=index.line_count, sha256=index.sha256,
        tool=index.tool, call_id=index.call_id, label=index.label,
        created_at=index.created_at, summary=index.summary,
    )


class ArtifactWriter:
    """Store complete tool outputs as artifacts; thread-safe."""

    def __init__(self, store: ObjectStore, config: TransferConfig | None = None) -> None:
        self.store = store
        self.config = config or TransferConfig()
        self._lock = threading.Lock()
        #: Indexes this writer committed, for its own use (never for reads, which verify
        #: what the store holds).
        self._written: OrderedDict[str, ArtifactIndex] = OrderedDict()

    def write(self, session_id: str, stream: Body, tool: str, call_id: CallId = None,
              label: str | None = None, *, output_kind: OutputKind = "text",
              output_description: str | None = None) -> ArtifactReference:
        """Store one complete tool output; returns its reference (see module docstring).

        ``output_kind``/``output_description`` are what the caller detected
        (:mod:`s3spill.typed.detect`) and go into the index. ``call_id`` may be a callable,
        asked once the body is stored (a hook learns the id after the output).
        """
        return self.write_hashed(keys.session_hash(session_id), stream, tool, call_id, label,
                                 output_kind=output_kind, output_description=output_description)

    def write_hashed(self, shash: str, stream: Body, tool: str, call_id: CallId = None,
                     label: str | None = None, *, output_kind: OutputKind = "text",
                     output_description: str | None = None) -> ArtifactReference:
        """:meth:`write` for a caller that holds only the session's hash: a batch job that
        finishes a dead writer's live output (:func:`~s3spill.live.finish.finish_lost`)."""
        keys.check_session_hash(shash)
        created_at = datetime.now(UTC)
        # ``source`` gives the content again for another name; None for a one-shot stream.
        source: Callable[[], Iterable[bytes]] | None
        rest: Iterator[bytes] | None = None
        if isinstance(stream, (bytes, bytearray, memoryview)):
            view = memoryview(stream).cast("B")
            head = [bytes(view[: self.config.index_chunk_size])]
            source = functools.partial(iter_body, view, self.config.index_chunk_size)
        else:
            head, rest = _peek(iter_body(stream, self.config.index_chunk_size),
                               self.config.multipart_threshold)
            source = None if rest is not None else functools.partial(iter, head)
        sniff = bytearray()
        for chunk in head:
            sniff += chunk[: _SNIFF - len(sniff)]
            if len(sniff) >= _SNIFF:
                break
        codec = choose_codec(self.config, bytes(sniff))
        for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
            name = keys.new_artifact_name(tool, created_at)
            encoder = FrameEncoder(self.config, codec, records=output_kind in ("csv", "tsv"))
            chunks = source() if source is not None else itertools.chain(head, rest or ())
            akey = keys.artifact_key(shash, name)
            try:
                put = self.store.put_if_absent(akey, StreamedBody(encoder.frames(chunks)),
                                               metadata={META_COMMIT: COMMIT_SIDECAR})
            except AlreadyExists:
                if source is None:
                    raise AlreadyExists(f"artifact name {name} was taken while a one-shot stream"
                                        " was being stored; it cannot be read again",
                                        key=akey) from None
                log.warning("artifact.name_taken", key=akey, attempt=attempt)
                continue
            index = encoder.stats().to_index(
                session_hash=shash, name=name, created_at=created_at, tool=tool,
                call_id=call_id() if callable(call_id) else call_id, label=label, body_etag=put.etag,
                output_kind=output_kind,
                output_description=output_description)
            self._commit(index, put.size, attempt)
            ref = reference_of(index)
            with self._lock:
                self._written[ref.source_id] = index
                while len(self._written) > _WRITTEN_CACHE_SIZE:
                    self._written.popitem(last=False)
            return ref
        raise AlreadyExists(f"no free artifact name after {MAX_NAME_ATTEMPTS} attempts")

    def written_index(self, ref: ArtifactReference) -> ArtifactIndex | None:
        """The index this instance committed for ``ref`` (e.g. its CSV record table), if recent."""
        with self._lock:
            return self._written.get(ref.source_id)

    def _commit(self, index: ArtifactIndex, stored: int, attempt: int) -> None:
        """Create the index, the commit record; the body is readable only from here on."""
        name = f"artifact:{index.session_hash}:{index.name}"
        if stored != index.stored_size:
            raise IntegrityError(f"{name}: the store took {stored} bytes, the frames made"
                                 f" {index.stored_size}")
        ikey = keys.index_key(index.session_hash, index.name)
        try:
            self.store.put_if_absent(ikey, index.to_bytes(), content_type="application/json")
        except AlreadyExists:
            # Nobody else creates an index under a body they did not write: a foreign
            # object. Both stay (never delete in doubt); the write fails.
            log.error("artifact.foreign_index", key=ikey, attempt=attempt)
            raise
        log.info("artifact.written", key=keys.artifact_key(index.session_hash, index.name),
                 bytes=index.size_bytes, stored=stored, codec=index.codec,
                 lines=index.line_count, attempt=attempt)
