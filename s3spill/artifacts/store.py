"""Artifacts: complete tool outputs, written once, verifiable, cheap to page through.

Write protocol (why it looks like this)
---------------------------------------
An artifact is two create-once objects: the body at ``artifacts/<name>`` and its sidecar
index at ``artifacts/<name>.idx`` (:mod:`s3spill.artifacts.index`). The name is generated (timestamp,
6 random bytes, a tool token); the key derives only from the trusted store root, the hashed
session id and that name.

1. **One pass over the input.** The stream (bytes, a binary file, or an iterable of
   chunks — e.g. the Spiller's tee) is consumed exactly once. Each chunk feeds the
   :class:`~s3spill.artifacts.index.IndexBuilder` (full SHA-256, size, line count, chunk table,
   summary) and a spool: a ``SpooledTemporaryFile`` that stays in memory up to
   ``part_size`` and then moves to a private (0600, unlinked) temporary file.
   Plain ``bytes`` need no spool.
2. **Reserve the name with the index.** ``put_if_absent(<name>.idx)``. Losing means the
   name is taken (two writers drew the same name, or a restarted generator repeated one):
   draw a new name and try again — nothing of the body has been uploaded yet.
3. **Create the body** with ``put_if_absent(<name>)`` from the spool, its metadata
   carrying :data:`~s3spill.artifacts.index.META_INDEX_SHA256`, the SHA-256 of the index bytes.
   Nobody else creates a body under a name whose index they did not win, so a loss here is
   a foreign object: it is left alone (never delete in doubt) and the write moves on to a
   new name. The store's own SHA-256 of what it stored must equal step 1's, or the write
   fails with :class:`IntegrityError` (the spool was damaged).

Why the body points at the index, not the other way round: the reader must be able to
verify the index it fetched. The index exists before the body is created, so its digest
can go into the body's metadata, which S3 fixes at create time (for multipart uploads at
*initiation*) — possible only because step 1 has seen the whole content before step 3
starts. The index in turn carries the body's full SHA-256, size and per-chunk digests.
Spooling costs local disk equal to the artifact, but it is what makes both links and
collision retries possible with a stream that can be read once.

Why no inline index for small artifacts: S3 caps user metadata at 2 KB, and one
verification path for every size is easier to get right (and for GC and the doctor to
reason about). The price is one small extra GET per cold read; the index is cached.

A crash between steps 2 and 3 leaves an index without a body: a reservation nobody can
read (readers go through the body's metadata first); GC may delete it after its TTL.

Read verification
-----------------
A read resolves the source id (strictly parsed, same session only), HEADs the body for the
pinned index digest, fetches the index and checks its digest, identity (session, name,
SHA-256 prefix of the source id) and size; the verified index is cached (immutable). Then it
fetches only the chunks it needs, with ranged GETs, and verifies each before using a byte.
Any mismatch raises :class:`IntegrityError` naming the source id. :meth:`grep` streams all
chunks and also checks the full SHA-256 before returning.

Threat model in one line: accidental corruption or an unconditional overwrite of the body
*or* of the index is always detected; a writer who replaces body and index consistently
(with metadata to match) is detected by :meth:`verify` and :meth:`grep` against the full
SHA-256 (its 64-bit prefix is in the source id, all of it in an ``ArtifactReference``), but
not by a single page read, which checks only the chunks it touches.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from pydantic import ValidationError

from s3spill import keys
from s3spill.artifacts.index import META_INDEX_SHA256, ArtifactIndex, ContentStats, IndexBuilder
from s3spill.artifacts.paging import DEFAULT_LIMIT, DEFAULT_MAX_CHARS, Page, build_page
from s3spill.artifacts.search import DEFAULT_MAX_MATCHES, GrepResult, compile_pattern, grep_chunks
from s3spill.config import TransferConfig
from s3spill.errors import (
    AlreadyExists,
    ArtifactExpired,
    ConfigError,
    IntegrityError,
    NotFound,
    SourceIdError,
)
from s3spill.log import get_logger
from s3spill.models import ArtifactMemoryReference, ArtifactReference
from s3spill.store.base import Body, ObjectStore, iter_body

log = get_logger("s3spill.artifacts.store")

#: How many fresh names a write tries before giving up (each loss is a real collision).
MAX_NAME_ATTEMPTS = 8
_INDEX_CACHE_SIZE = 64

SourceRef = str | keys.SourceId | ArtifactReference | ArtifactMemoryReference
#: Gives the body again from its start, for each attempt at a fresh name.
_Reopen = Callable[[], Body]


@dataclass(frozen=True)
class ResolvedArtifact:
    """A source id that passed every check, with the keys derived from it."""

    source_id: keys.SourceId
    artifact_key: str
    index_key: str
    #: Full SHA-256 the caller vouches for (from a reference), checked against the index.
    expected_sha256: str | None = None


class ArtifactStore:
    """Write artifacts and read them back, verified, a page or a search at a time.

    ``session_id`` names the caller's session; it comes from the harness (construction
    or per call), never from the model. Reads accept only source ids of that session.
    """

    def __init__(self, store: ObjectStore, config: TransferConfig | None = None, *,
                 session_id: str | None = None, spool_dir: str | None = None) -> None:
        self.store = store
        self.config = config or TransferConfig()
        self.session_id = session_id
        self.spool_dir = spool_dir
        self._cache: OrderedDict[str, ArtifactIndex] = OrderedDict()
        self._lock = threading.Lock()

    # -- writing ----------------------------------------------------------------------

    def write(self, session_id: str, stream: Body, tool: str, call_id: str | None = None,
              label: str | None = None) -> ArtifactReference:
        """Store one complete tool output; returns its reference (see module docstring)."""
        shash = keys.session_hash(session_id)
        created_at = datetime.now(UTC)
        with ExitStack() as stack:
            stats, reopen = self._consume(stream, stack)
            for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
                name = keys.new_artifact_name(tool, created_at)
                index = stats.to_index(session_hash=shash, name=name, created_at=created_at,
                                       tool=tool, call_id=call_id, label=label)
                if self._create(index, reopen, attempt):
                    return self._reference(index)
        raise AlreadyExists(f"no free artifact name after {MAX_NAME_ATTEMPTS} attempts")

    def _consume(self, stream: Body, stack: ExitStack) -> tuple[ContentStats, _Reopen]:
        """The one pass: index builder and spool fed from the same chunks."""
        builder = IndexBuilder(self.config.index_chunk_size)
        if isinstance(stream, (bytes, bytearray, memoryview)):
            data = bytes(stream)
            builder.feed(data)
            return builder.finish(), lambda: data
        spool = stack.enter_context(tempfile.SpooledTemporaryFile(  # noqa: SIM115
            max_size=self.config.part_size, dir=self.spool_dir))
        for chunk in iter_body(stream, self.config.part_size):
            builder.feed(chunk)
            spool.write(chunk)
        spool.flush()

        def reopen() -> IO[bytes]:
            spool.seek(0)
            return spool

        return builder.finish(), reopen

    def _create(self, index: ArtifactIndex, reopen: _Reopen, attempt: int) -> bool:
        akey = keys.artifact_key(index.session_hash, index.name)
        ikey = keys.index_key(index.session_hash, index.name)
        raw = index.to_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        try:
            self.store.put_if_absent(ikey, raw, content_type="application/json")
        except AlreadyExists:
            log.warning("artifact.name_taken", key=ikey, attempt=attempt)
            return False
        try:
            put = self.store.put_if_absent(akey, reopen(), metadata={META_INDEX_SHA256: digest})
        except AlreadyExists:
            log.error("artifact.foreign_body", key=akey, attempt=attempt)
            return False
        if put.sha256 != index.sha256 or put.size != index.size_bytes:
            raise IntegrityError(
                f"artifact:{index.session_hash}:{index.name}: stored {put.size} bytes with"
                f" SHA-256 {put.sha256[:16]}, but the content read was {index.size_bytes} bytes"
                f" with {index.sha256[:16]}"
            )
        log.info("artifact.written", key=akey, bytes=index.size_bytes, lines=index.line_count,
                 attempt=attempt)
        return True

    @staticmethod
    def _reference(index: ArtifactIndex) -> ArtifactReference:
        sid = keys.SourceId(index.session_hash, index.name, index.sha256[:16])
        return ArtifactReference(
            source_id=str(sid), session_hash=index.session_hash, name=index.name,
            size_bytes=index.size_bytes, line_count=index.line_count, sha256=index.sha256,
            tool=index.tool, call_id=index.call_id, label=index.label,
            created_at=index.created_at, summary=index.summary,
        )

    # -- resolving --------------------------------------------------------------------

    def _session(self, session_id: str | None) -> str:
        session = session_id or self.session_id
        if not session:
            raise ConfigError("no session: the harness must name the session to read from")
        return session

    def resolve(self, source: SourceRef, session_id: str | None = None) -> ResolvedArtifact:
        """Check a source id (or a reference) strictly: well-formed and of this session."""
        expected = None
        if isinstance(source, (ArtifactReference, ArtifactMemoryReference)):
            expected = source.sha256
            source = source.source_id
        sid = source if isinstance(source, keys.SourceId) else keys.SourceId.parse(source)
        sid = keys.SourceId.parse(str(sid))  # re-validate a hand-built SourceId
        sid.require_session(self._session(session_id))
        if expected is not None and not expected.startswith(sid.sha256_prefix):
            raise SourceIdError(f"reference to {sid} carries a different SHA-256")
        return ResolvedArtifact(
            source_id=sid,
            artifact_key=keys.artifact_key(sid.session_hash, sid.name),
            index_key=keys.index_key(sid.session_hash, sid.name),
            expected_sha256=expected,
        )

    def index(self, source: SourceRef, session_id: str | None = None) -> ArtifactIndex:
        """The verified index of an artifact of this session."""
        return self._index(self.resolve(source, session_id))

    def reference(self, source: SourceRef, session_id: str | None = None) -> ArtifactReference:
        """Rebuild the :class:`ArtifactReference` of a stored artifact from its verified index."""
        return self._reference(self.index(source, session_id))

    def _index(self, art: ResolvedArtifact) -> ArtifactIndex:
        sid = str(art.source_id)
        with self._lock:
            cached = self._cache.get(sid)
            if cached is not None:
                self._cache.move_to_end(sid)
        index = cached or self._load_index(art)
        if art.expected_sha256 is not None and index.sha256 != art.expected_sha256:
            raise IntegrityError(f"{sid}: stored SHA-256 differs from the reference's")
        if cached is None:
            with self._lock:
                self._cache[sid] = index
                while len(self._cache) > _INDEX_CACHE_SIZE:
                    self._cache.popitem(last=False)
        return index

    def _load_index(self, art: ResolvedArtifact) -> ArtifactIndex:
        sid = str(art.source_id)
        try:
            info = self.store.head(art.artifact_key)
        except NotFound:
            raise ArtifactExpired(_expired(sid), key=art.artifact_key) from None
        pinned = info.metadata.get(META_INDEX_SHA256)
        if not pinned:
            raise IntegrityError(f"{sid}: the artifact does not name its index")
        try:
            raw = self.store.get(art.index_key)
        except NotFound:
            raise IntegrityError(f"{sid}: the artifact's index is missing") from None
        if hashlib.sha256(raw).hexdigest() != pinned:
            raise IntegrityError(f"{sid}: the index does not match the digest its artifact pins")
        try:
            index = ArtifactIndex.model_validate_json(raw)
        except ValidationError:
            raise IntegrityError(f"{sid}: the index does not parse") from None
        if (index.session_hash != art.source_id.session_hash or index.name != art.source_id.name
                or not index.sha256.startswith(art.source_id.sha256_prefix)
                or index.size_bytes != info.size):
            raise IntegrityError(f"{sid}: the index describes a different artifact")
        return index

    # -- reading ----------------------------------------------------------------------

    def _fetch_chunk(self, art: ResolvedArtifact, index: ArtifactIndex, k: int) -> bytes:
        start, end = index.chunk_range(k)
        try:
            data = self.store.get(art.artifact_key, (start, end))
        except NotFound:
            raise ArtifactExpired(_expired(str(art.source_id)), key=art.artifact_key) from None
        # A shortened body returns fewer bytes (or none, for a range past its end): the
        # length check in verify_chunk turns that into an IntegrityError.
        return index.verify_chunk(k, data, str(art.source_id))

    def read_page(self, source: SourceRef, offset: int = 0, limit: int = DEFAULT_LIMIT,
                  char_offset: int = 0, max_chars: int = DEFAULT_MAX_CHARS, *,
                  session_id: str | None = None) -> Page:
        """One verified page; see :mod:`s3spill.artifacts.paging` for its conventions."""
        art = self.resolve(source, session_id)
        index = self._index(art)
        page = build_page(index, lambda k: self._fetch_chunk(art, index, k), str(art.source_id),
                          offset=offset, limit=limit, char_offset=char_offset, max_chars=max_chars)
        log.debug("artifact.read_page", source_id=str(art.source_id), offset=offset,
                  lines=len(page.lines), bytes=page.byte_end - page.byte_start)
        return page

    def iter_verified(self, source: SourceRef, session_id: str | None = None) -> Iterator[bytes]:
        """Every chunk in order, each verified; the full SHA-256 is checked at the end."""
        art = self.resolve(source, session_id)
        return self._iter_verified(art, self._index(art))

    def _iter_verified(self, art: ResolvedArtifact, index: ArtifactIndex) -> Iterator[bytes]:
        sid = str(art.source_id)
        if index.size_bytes == 0:
            if index.sha256 != hashlib.sha256(b"").hexdigest():
                raise IntegrityError(f"{sid}: empty artifact with a non-empty digest")
            return
        full = hashlib.sha256()
        buf = bytearray()
        k, n = 0, index.chunk_count
        try:
            for piece in self.store.iter_chunks(art.artifact_key, (0, index.size_bytes),
                                                index.chunk_size):
                buf += piece
                while k < n:
                    start, end = index.chunk_range(k)
                    if len(buf) < end - start:
                        break
                    chunk = index.verify_chunk(k, bytes(buf[: end - start]), sid)
                    del buf[: end - start]
                    full.update(chunk)
                    k += 1
                    yield chunk
        except NotFound:
            raise NotFound(f"artifact {sid} is gone", key=art.artifact_key) from None
        if k != index.chunk_count or buf:
            raise IntegrityError(f"{sid}: the artifact is shorter or longer than its index")
        if full.hexdigest() != index.sha256:
            raise IntegrityError(f"{sid}: full SHA-256 does not match")

    def verify(self, source: SourceRef, session_id: str | None = None) -> ArtifactIndex:
        """Read everything and check every chunk and the full SHA-256."""
        art = self.resolve(source, session_id)
        index = self._index(art)
        for _ in self._iter_verified(art, index):
            pass
        return index

    def grep(self, source: SourceRef, pattern: str, context: int = 0,
             max_matches: int = DEFAULT_MAX_MATCHES, *, ignore_case: bool = False,
             session_id: str | None = None) -> GrepResult:
        """Search every line of a verified artifact; see :mod:`s3spill.artifacts.search`."""
        compiled = compile_pattern(pattern, ignore_case=ignore_case)
        art = self.resolve(source, session_id)
        index = self._index(art)
        return grep_chunks(self._iter_verified(art, index), str(art.source_id), compiled,
                           context=context, max_matches=max_matches,
                           expected_lines=index.line_count)


def _expired(source_id: str) -> str:
    return (f"{source_id} is no longer stored: this output expired (GC deletes unreferenced "
            "outputs after their TTL); re-running the command that produced it is fine")
