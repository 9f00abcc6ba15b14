"""Which index a read may trust: verified against its body's HEAD, or confirmed by the first chunk's GET.

Split from :mod:`.reader` (a mixin of :class:`~s3spill.artifacts.reader.ArtifactReader`)
because it is one job: turning a source id into an index every later check can lean on,
and saying exactly why when there is none (missing, erased, never committed, damaged).

Two ways to trust an index. The full way (:meth:`IndexVerifier._load_index`): HEAD the
body for its ETag and metadata (or, version 1, the index digest it pins), GET the index,
check that it commits this body, its identity and size. The deferred way, for page reads
(``_index(art, deferred=True)``): GET the index alone, check its identity, and fetch the
first chunk with ``If-Match`` on the ETag the index commits
(:meth:`~s3spill.store.base.ObjectStore.get_if_match`), which confirms the body and
returns its metadata (the commit marker is checked as the HEAD path checks it) in one
request: a cold page on S3 is two requests, not three. Until that GET succeeds the index
is kept out of the cache and nothing is shown from it (:meth:`IndexVerifier._confirmed`
falls back to the HEAD when a read touched no chunk); any failure goes the full way, so
errors read the same as ever.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from s3spill import keys
from s3spill.artifacts.index import META_INDEX_SHA256, ArtifactIndex
from s3spill.artifacts.index_fields import IndexInvalid
from s3spill.errors import (
    ArtifactErased,
    ArtifactNotFound,
    BucketNotFound,
    IntegrityError,
    NotFound,
    PreconditionFailed,
    SourceIdError,
)
from s3spill.store.base import ObjectStore
from s3spill.store.commit import COMMIT_SIDECAR, META_COMMIT, defers_digest

__all__ = ["INDEX_CACHE_SIZE", "IndexVerifier", "ResolvedArtifact"]

INDEX_CACHE_SIZE = 64


@dataclass(frozen=True)
class ResolvedArtifact:
    """A source id that passed every check, with the keys derived from it."""

    source_id: keys.SourceId
    artifact_key: str
    index_key: str
    #: Full SHA-256 the caller vouches for (from a reference), checked against the index.
    expected_sha256: str | None = None



class IndexVerifier:
    """The index half of :class:`~s3spill.artifacts.reader.ArtifactReader` (see the module)."""

    store: ObjectStore
    _lock: threading.Lock
    _cache: OrderedDict[str, ArtifactIndex]
    #: Indexes read without their body's HEAD, until a chunk GET with If-Match confirms them.
    _unconfirmed: dict[str, ArtifactIndex]

    def _index(self, art: ResolvedArtifact, *, deferred: bool = False) -> ArtifactIndex:
        """The verified index; ``deferred``: a chunk read follows and may confirm the body.

        With ``deferred``, a version 2 index is read without the body's HEAD: the first
        chunk is then fetched with ``If-Match`` on the ETag the index commits
        (:meth:`_raw_chunk`), which confirms the body and reads it in one request, so a
        cold page costs two requests (index, chunk) instead of three. Until that GET
        succeeds the index is kept out of the cache, and nothing is shown from it.
        """
        sid = str(art.source_id)
        with self._lock:
            cached = self._cache.get(sid)
            if cached is not None:
                self._cache.move_to_end(sid)
            elif deferred and sid in self._unconfirmed:
                cached = self._unconfirmed[sid]
        if cached is not None:
            index = cached
        elif deferred:
            index = self._load_index_deferred(art)
        else:
            index = self._load_index(art)
        if art.expected_sha256 is not None and index.sha256 != art.expected_sha256:
            raise IntegrityError(f"{sid}: stored SHA-256 differs from the reference's")
        if cached is None and sid not in self._unconfirmed:
            self._remember(sid, index)
        return index

    def _remember(self, sid: str, index: ArtifactIndex) -> None:
        with self._lock:
            self._unconfirmed.pop(sid, None)
            self._cache[sid] = index
            while len(self._cache) > INDEX_CACHE_SIZE:
                self._cache.popitem(last=False)

    def _load_index_deferred(self, art: ResolvedArtifact) -> ArtifactIndex:
        """The index alone (one GET), its body to be confirmed by the first chunk's GET.

        Anything but a parsable version 2 index naming its body's ETag goes the full way
        (:meth:`_load_index`: HEAD first), which also says why a missing one is missing.
        """
        try:
            raw = self.store.get(art.index_key)
        except NotFound:
            return self._load_index(art)
        try:
            index = ArtifactIndex.model_validate_json(raw)
        except IndexInvalid:
            return self._load_index(art)
        if index.schema_version < 2 or not index.body_etag:
            return self._load_index(art, raw)
        self._check_identity(art, index)
        with self._lock:
            self._unconfirmed[str(art.source_id)] = index
        return index

    def _load_index(self, art: ResolvedArtifact, raw: bytes | None = None) -> ArtifactIndex:
        """The index, verified against its body's HEAD (``raw``: the index, if already read)."""
        sid = str(art.source_id)
        try:
            info = self.store.head(art.artifact_key)
        except NotFound:
            raise self._missing(art) from None
        pinned = info.metadata.get(META_INDEX_SHA256)  # version 1: the body pins its index
        committed = defers_digest(info)  # version 2: the index commits the body
        if not pinned and not committed:
            raise IntegrityError(f"{sid}: the artifact does not name its index")
        try:
            raw = self.store.get(art.index_key) if raw is None else raw
        except NotFound:
            if committed:
                raise ArtifactNotFound(f"artifact {sid} was never committed (no index)",
                                       key=art.artifact_key, source_id=sid) from None
            raise IntegrityError(f"{sid}: the artifact's index is missing") from None
        if pinned and hashlib.sha256(raw).hexdigest() != pinned:
            raise IntegrityError(f"{sid}: the index does not match the digest its artifact pins")
        try:
            index = ArtifactIndex.model_validate_json(raw)
        except IndexInvalid:
            raise IntegrityError(f"{sid}: the index does not parse") from None
        if not pinned and (index.schema_version < 2 or index.body_etag != info.etag):
            raise IntegrityError(f"{sid}: the index does not commit this body (ETag differs)")
        if index.stored_size != info.size:
            raise IntegrityError(f"{sid}: the index describes a different artifact")
        return self._check_identity(art, index)

    def _check_identity(self, art: ResolvedArtifact, index: ArtifactIndex) -> ArtifactIndex:
        """The index is this id's: session, name, and the id's digest prefix."""
        sid = str(art.source_id)
        if index.session_hash != art.source_id.session_hash or index.name != art.source_id.name:
            raise IntegrityError(f"{sid}: the index describes a different artifact")
        if not index.sha256.startswith(art.source_id.sha256_prefix):
            # The body and its index agree; only the id's digest suffix differs: a mistyped or
            # made-up id, not damaged bytes (a full read would still check every byte).
            raise SourceIdError(
                f"{sid}: no artifact of this session has this digest; the artifact "
                f"{index.name} has SHA-256 {index.sha256[:16]}, not {art.source_id.sha256_prefix}",
                hint="check the source id for a typo")
        return index

    def _missing(self, art: ResolvedArtifact) -> NotFound:
        """Why an artifact's body is not there: no bucket at all, or no such artifact.

        A HEAD of a missing key and of a missing bucket both answer a bare 404; a GET of
        the index says which (and only on this failure path). Whether GC deleted it is
        for the session's journal to say (:func:`s3spill.leases.expiry.explain_missing`).
        """
        sid = str(art.source_id)
        try:
            self.store.get(art.index_key)
        except BucketNotFound as exc:
            return exc
        except NotFound:
            if self._erased(art):
                return ArtifactErased(f"{sid} was erased on request (its session was purged); it is "
                                      "gone for good", key=art.artifact_key, source_id=sid)
            return ArtifactNotFound(f"{sid}: no such artifact in this session (never written here, "
                                    "or deleted)", key=art.artifact_key, source_id=sid)
        return ArtifactNotFound(f"{sid}: the artifact's body is gone (deleted)", key=art.artifact_key,
                                source_id=sid)

    def _erased(self, art: ResolvedArtifact) -> bool:
        """Whether the session was purged: its audit record is there (only on this failure path)."""
        try:
            self.store.head(keys.erasure_key(art.source_id.session_hash))
        except NotFound:
            return False
        return True

    def _confirming_get(self, art: ResolvedArtifact, index: ArtifactIndex, span: tuple[int, int]) -> bytes:
        """A chunk of a body whose index came without a HEAD: only if the body is the one the
        index commits (its ETag); then the index is verified and cached like any other."""
        try:
            frame, metadata = self.store.get_if_match(art.artifact_key, span, index.body_etag or "")
            if metadata.get(META_COMMIT) != COMMIT_SIDECAR:  # as the HEAD path: the body says so
                raise PreconditionFailed(f"{art.artifact_key}: the body does not defer to its index",
                                         key=art.artifact_key)
        except (NotFound, PreconditionFailed):
            # Which failure: the full check (HEAD) raises it in the same words as ever; if
            # the body is the committed one after all, the chunk is read as for any index.
            with self._lock:
                self._unconfirmed.pop(str(art.source_id), None)
            verified = self._load_index(art)
            if verified != index:
                raise IntegrityError(f"{art.source_id}: the artifact's index changed while it was "
                                     "being read") from None
            frame = self.store.get(art.artifact_key, span)
        self._remember(str(art.source_id), index)
        return frame

    @contextlib.contextmanager
    def _confirmed(self, art: ResolvedArtifact) -> Iterator[None]:
        """Whatever the body reads inside said (a page, or an error about the index): if no
        chunk GET confirmed a deferred index, its body's HEAD does before it is told."""
        try:
            yield
        finally:
            with self._lock:
                index = self._unconfirmed.pop(str(art.source_id), None)
            if index is not None:
                if self._load_index(art) != index:
                    raise IntegrityError(f"{art.source_id}: the artifact's index changed while it "
                                         "was being read")
                self._remember(str(art.source_id), index)
