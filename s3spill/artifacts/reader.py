"""Reading artifacts back: every byte verified before it is used, a page or a search at a time.

A read resolves the source id (strictly parsed, same session only) and gets an index it
can trust (:mod:`.indexes`: the body's HEAD, then the index and its checks; or, for a
page, the index first and the first chunk fetched with ``If-Match`` on the ETag it
commits); the verified index is cached (immutable). Then it fetches only the frames it needs,
with ranged GETs, decodes and verifies each before using a byte; decoded chunks are kept
in a small cache, so re-fitting a page to its budget never fetches a chunk twice.
Any mismatch raises :class:`IntegrityError` naming the source id. :meth:`grep` streams all
chunks and also checks the full SHA-256 before returning.

Threat model: accidental corruption or an unconditional overwrite of the body is always
detected (the index pins its ETag, each frame its raw SHA-256), and so is a damaged or
replaced index that misdescribes the bytes a read touches. A version 2 index cannot be
pinned by a body written before it, so a deliberate rewrite of only its descriptive fields
(tool, label, created_at) that keeps the body's ETag is not detected; a version 1 index
is pinned whole. A writer who replaces body and index consistently is detected by
:meth:`verify` and :meth:`grep` against the full SHA-256 (its 64-bit prefix is in the
source id, all of it in an ``ArtifactReference``), but not by a single page read, which
checks only the chunks it touches.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeAlias

from s3spill import keys
from s3spill.artifacts.index import ArtifactIndex
from s3spill.artifacts.indexes import IndexVerifier, ResolvedArtifact
from s3spill.artifacts.paging import Page, build_page
from s3spill.artifacts.views import ChunkView, around, lines_kept_by, page_as_stored, viewed
from s3spill.context.read_limits import (
    DEFAULT_BYTES,
    DEFAULT_ELEMENTS,
    DEFAULT_LIMIT,
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_MATCHES,
    DEFAULT_RECORDS,
)
from s3spill.errors import (
    ArtifactNotFound,
    ConfigError,
    IntegrityError,
    InvalidRequest,
    NotFound,
    SourceIdError,
)
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore

if TYPE_CHECKING:  # each loads with the first call that needs it: a page read needs none of them
    from s3spill.artifacts.grep.result import GrepResult
    from s3spill.config import TransferConfig
    from s3spill.models import ArtifactMemoryReference, ArtifactReference
    from s3spill.typed.bytepage import BytePage
    from s3spill.typed.jsonpath import JsonPage
    from s3spill.typed.recordpage import RecordPage

__all__ = ["ArtifactReader", "ResolvedArtifact", "SourceRef"]

log = get_logger("s3spill.artifacts.store")

#: Decoded, verified chunks kept across page reads (a page re-fitted to its budget, the
#: next page of a sequential read). Immutable artifacts make this safe.
_CHUNK_CACHE_BYTES = 8 * 1024 * 1024

SourceRef: TypeAlias = "str | keys.SourceId | ArtifactReference | ArtifactMemoryReference"


class ArtifactReader(IndexVerifier):
    """Read artifacts of one session back, verified, a page or a search at a time.

    ``session_id`` names the caller's session; it comes from the harness (construction
    or per call), never from the model. Reads accept only source ids of that session.
    """

    def __init__(self, store: ObjectStore, config: TransferConfig | None = None, *,
                 session_id: str | None = None, view: ChunkView | None = None) -> None:
        self.store = store
        self._config = config
        self.session_id = session_id
        #: What reads show of the stored bytes (:mod:`s3spill.artifacts.views`); None: them.
        self.view = view
        self._cache: OrderedDict[str, ArtifactIndex] = OrderedDict()
        #: Indexes read without their body's HEAD, until a chunk GET with If-Match confirms them.
        self._unconfirmed: dict[str, ArtifactIndex] = {}
        self._chunks: OrderedDict[tuple[str, int, bool], bytes] = OrderedDict()
        self._chunk_bytes = 0
        self._lock = threading.Lock()

    @property
    def config(self) -> TransferConfig:
        """The transfer settings (the defaults built on first use: a read does not need them)."""
        if self._config is None:
            from s3spill.config import TransferConfig

            self._config = TransferConfig()
        return self._config

    # -- resolving --------------------------------------------------------------------

    def _session(self, session_id: str | None) -> str:
        session = session_id or self.session_id
        if not session:
            raise ConfigError("no session: the harness must name the session to read from")
        return session

    def resolve(self, source: SourceRef, session_id: str | None = None) -> ResolvedArtifact:
        """Check a source id (or a reference) strictly: well-formed and of this session."""
        expected = None
        if not isinstance(source, (str, keys.SourceId)):
            from s3spill.models import ArtifactMemoryReference, ArtifactReference

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
        from s3spill.artifacts.writer import reference_of

        return reference_of(self.index(source, session_id))

    # -- reading ----------------------------------------------------------------------

    def _fetch_chunk(self, art: ResolvedArtifact, index: ArtifactIndex, k: int) -> bytes:
        """Chunk ``k`` as reads show it: verified, through the view with its neighbours."""
        if self.view is None:
            return self._raw_chunk(art, index, k)
        ckey = (str(art.source_id), k, True)
        with self._lock:
            hit = self._chunks.get(ckey)
            if hit is not None:
                self._chunks.move_to_end(ckey)
                return hit
        before, after = around(index.chunk_count, lambda j: self._raw_chunk(art, index, j), k)
        data = self.view(self._raw_chunk(art, index, k), before, after)
        self._cached(ckey, data)
        return data

    def _cached(self, ckey: tuple[str, int, bool], data: bytes) -> None:
        with self._lock:
            self._chunks[ckey] = data
            self._chunk_bytes += len(data)
            while self._chunk_bytes > _CHUNK_CACHE_BYTES and len(self._chunks) > 1:
                _, old = self._chunks.popitem(last=False)
                self._chunk_bytes -= len(old)

    def _shown(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """A verified stream as reads show it (each chunk through the view, in context)."""
        if self.view is None:
            return chunks
        return (data for _, data in viewed(((None, c) for c in chunks), self.view))

    def _raw_chunk(self, art: ResolvedArtifact, index: ArtifactIndex, k: int) -> bytes:
        """Chunk ``k``, raw and verified; from the chunk cache when a recent read had it."""
        ckey = (str(art.source_id), k, False)
        with self._lock:
            hit = self._chunks.get(ckey)
            if hit is not None:
                self._chunks.move_to_end(ckey)
                return hit
        start, end = index.stored_range(k)
        sid = str(art.source_id)
        with self._lock:
            unconfirmed = self._unconfirmed.get(sid) is index
        try:
            if unconfirmed:
                frame = self._confirming_get(art, index, (start, end))
            else:
                frame = self.store.get(art.artifact_key, (start, end))
        except NotFound:
            raise ArtifactNotFound(f"{art.source_id}: the artifact's body is gone (deleted while "
                                   "being read)", key=art.artifact_key,
                                   source_id=str(art.source_id)) from None
        # A shortened body returns fewer bytes (or none, for a range past its end): the
        # decoding and the length check turn that into an IntegrityError.
        data = index.decode_chunk(k, frame, str(art.source_id))
        self._cached(ckey, data)
        return data

    def read_page(self, source: SourceRef, offset: int = 0,
                  limit: int = DEFAULT_LIMIT, char_offset: int = 0,
                  max_chars: int = DEFAULT_MAX_CHARS, *, since: int | None = None,
                  session_id: str | None = None) -> Page:
        """One verified page; see :mod:`s3spill.artifacts.paging` for its conventions.

        Live ids (``live:...``) are read by :mod:`s3spill.live.reader`. ``since`` (a byte
        offset, as a live page's footer gives it) starts at the line holding
        that byte instead of at ``offset``.

        Through a view that says which lines it keeps as stored (the secret mask's
        ``keeps_lines``), a page with no ``char_offset`` is filled from the stored chunks and
        kept when the view keeps its lines (:func:`~s3spill.artifacts.views.page_as_stored`):
        the same page, without viewing whole chunks. Otherwise it is filled from the shown chunks.
        """
        if since is not None:
            offset, char_offset = self.line_at(source, since, session_id=session_id), 0
        art = self.resolve(source, session_id)
        keeps = lines_kept_by(self.view) if not char_offset else None
        with self._confirmed(art):
            index = self._index(art, deferred=True)
            page = None
            if keeps is not None:  # the page from the stored chunks, if the view keeps its lines
                raw = lambda k: self._raw_chunk(art, index, k)  # noqa: E731
                page = build_page(index, raw, str(art.source_id), offset=offset, limit=limit,
                                  max_chars=max_chars)
                if not page_as_stored(index, raw, page.byte_start, page.byte_end - page.byte_start, keeps):
                    page = None
            if page is None:
                page = build_page(index, lambda k: self._fetch_chunk(art, index, k), str(art.source_id),
                                  offset=offset, limit=limit, char_offset=char_offset, max_chars=max_chars)
        log.debug("artifact.read_page", source_id=str(art.source_id), offset=offset,
                  lines=len(page.lines), bytes=page.byte_end - page.byte_start)
        return page

    def line_at(self, source: SourceRef, byte: int, session_id: str | None = None) -> int:
        """The 0-based line holding byte ``byte`` (the line count when it is past the end)."""
        art = self.resolve(source, session_id)
        index = self._index(art)
        if byte < 0:
            raise InvalidRequest("a byte offset must be >= 0")
        if byte >= index.size_bytes:
            return index.line_count
        k = byte // index.chunk_size
        data = self._fetch_chunk(art, index, k)
        return index.newlines_before[k] + data[: byte - k * index.chunk_size].count(b"\n")

    def read_bytes(self, source: SourceRef, byte_offset: int = 0, nbytes: int = DEFAULT_BYTES,
                   max_chars: int = DEFAULT_MAX_CHARS, *, session_id: str | None = None) -> BytePage:
        """Verified bytes by offset, rendered as a hexdump (see :mod:`s3spill.typed.bytepage`)."""
        from s3spill.typed.bytepage import build_byte_page

        art = self.resolve(source, session_id)
        with self._confirmed(art):
            index = self._index(art, deferred=True)
            return build_byte_page(index, lambda k: self._fetch_chunk(art, index, k),
                                   str(art.source_id), byte_offset=byte_offset, nbytes=nbytes,
                                   max_chars=max_chars)

    def read_json(self, source: SourceRef, path: str = "", offset: int = 0,
                  limit: int = DEFAULT_ELEMENTS, max_chars: int = DEFAULT_MAX_CHARS, *,
                  session_id: str | None = None) -> JsonPage:
        """The value at a JSON Pointer, streamed over verified chunks (see
        :mod:`s3spill.typed.jsonpath`); reading stops where the page ends."""
        from s3spill.typed.jsonpath import build_json_page

        art = self.resolve(source, session_id)
        index = self._index(art)
        page = build_json_page(self._shown(self._iter_verified(art, index)), str(art.source_id),
                               index.size_bytes, path=path, offset=offset, limit=limit, max_chars=max_chars)
        log.debug("artifact.read_json", source_id=str(art.source_id), path=path[:200],
                  elements=len(page.rows), scanned=page.bytes_scanned)
        return page

    def read_records(self, source: SourceRef, record_offset: int = 0, limit: int = DEFAULT_RECORDS,
                     max_chars: int = DEFAULT_MAX_CHARS, *, session_id: str | None = None) -> RecordPage:
        """CSV/TSV records by number, header repeated (see :mod:`s3spill.typed.recordpage`)."""
        from s3spill.typed.recordpage import build_record_page

        art = self.resolve(source, session_id)
        with self._confirmed(art):
            index = self._index(art, deferred=True)
            return build_record_page(index, lambda k: self._fetch_chunk(art, index, k),
                                     str(art.source_id), record_offset=record_offset, limit=limit,
                                     max_chars=max_chars)

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
            for piece in self.store.iter_chunks(art.artifact_key, (0, index.stored_size),
                                                index.chunk_size):
                buf += piece
                while k < n:
                    start, end = index.stored_range(k)
                    if len(buf) < end - start:
                        break
                    chunk = index.decode_chunk(k, bytes(buf[: end - start]), sid)
                    del buf[: end - start]
                    full.update(chunk)
                    k += 1
                    yield chunk
        except NotFound:
            raise ArtifactNotFound(f"{sid}: the artifact's body is gone (deleted while being read)",
                                   key=art.artifact_key, source_id=sid,
                                   hint="run the command that produced it again") from None
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
        """Search every line of a verified artifact; see :mod:`s3spill.artifacts.grep`.
        (live ids: :func:`s3spill.live.reader.grep`)."""
        from s3spill.artifacts.grep.engine import grep_chunks
        from s3spill.artifacts.grep.pattern import compile_pattern

        compiled = compile_pattern(pattern, ignore_case=ignore_case)
        art = self.resolve(source, session_id)
        index = self._index(art)
        if index.output_kind == "binary":
            # Lines of random bytes are not text: a match would put control bytes in front
            # of the model (or a terminal). The hexdump is the way into binary data.
            raise InvalidRequest(
                f"{art.source_id} is {index.output_description or 'binary data'}: grep searches "
                "text, and this output has none",
                hint="page it as a hexdump by byte offset instead (byte_offset=/bytes=, or "
                     "`s3spill read ID --byte-offset N --bytes M`)")
        result = grep_chunks(self._shown(self._iter_verified(art, index)), str(art.source_id), compiled,
                             context=context, max_matches=max_matches,
                             expected_lines=index.line_count)
        if not index.chunk_records:
            return result
        from s3spill.typed.recordpage import record_at

        numbered = tuple(m.model_copy(update={"record_number": record_at(
            index, lambda k: self._fetch_chunk(art, index, k), m.byte_offset)})
            for m in result.matches)
        return result.model_copy(update={"matches": numbered})
