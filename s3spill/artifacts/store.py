"""Artifacts: complete tool outputs, written once, verifiable, cheap to page through.

:class:`ArtifactStore` is the one front the layers above use: it writes through an
:class:`~s3spill.artifacts.writer.ArtifactWriter` (the write protocol and why it looks
like this are there) and reads as an :class:`~s3spill.artifacts.reader.ArtifactReader`
(read verification and the threat model are there). One object per session is what a
harness holds; the two halves share the store and the transfer settings, nothing else.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from s3spill import keys
from s3spill.artifacts.index import ArtifactIndex, OutputKind
from s3spill.artifacts.reader import ArtifactReader, ResolvedArtifact, SourceRef
from s3spill.artifacts.views import ChunkView
from s3spill.store.base import Body, ObjectStore

if TYPE_CHECKING:  # the write path loads with the first write: a read process needs none of it
    from s3spill.artifacts.writer import MAX_NAME_ATTEMPTS as MAX_NAME_ATTEMPTS
    from s3spill.artifacts.writer import ArtifactWriter, CallId
    from s3spill.config import TransferConfig
    from s3spill.models import ArtifactReference

__all__ = ["MAX_NAME_ATTEMPTS", "ArtifactStore", "ResolvedArtifact", "SourceRef"]


def __getattr__(name: str) -> object:
    if name == "MAX_NAME_ATTEMPTS":
        from s3spill.artifacts.writer import MAX_NAME_ATTEMPTS

        return MAX_NAME_ATTEMPTS
    raise AttributeError(f"module 's3spill.artifacts.store' has no attribute {name!r}")


class ArtifactStore(ArtifactReader):
    """Write artifacts and read them back, verified, a page or a search at a time.

    ``session_id`` names the caller's session; it comes from the harness (construction
    or per call), never from the model. Reads accept only source ids of that session.
    """

    def __init__(self, store: ObjectStore, config: TransferConfig | None = None, *,
                 session_id: str | None = None, view: ChunkView | None = None) -> None:
        super().__init__(store, config, session_id=session_id, view=view)

    @functools.cached_property
    def writer(self) -> ArtifactWriter:
        """The write protocol's half (built on the first write or :meth:`with_view`)."""
        from s3spill.artifacts.writer import ArtifactWriter

        return ArtifactWriter(self.store, self.config)

    def with_view(self, view: ChunkView | None) -> ArtifactStore:
        """The same store and session, its reads through ``view`` (verified indexes shared)."""
        other = ArtifactStore(self.store, self.config, session_id=self.session_id, view=view)
        other._cache = self._cache
        other._unconfirmed = self._unconfirmed
        other.writer = self.writer
        return other

    def write(self, session_id: str, stream: Body, tool: str, call_id: CallId = None,
              label: str | None = None, *, output_kind: OutputKind = "text",
              output_description: str | None = None) -> ArtifactReference:
        """Store one complete tool output; returns its reference (:mod:`s3spill.artifacts.writer`).

        ``output_kind``/``output_description`` are what the caller detected (the typed
        layer's detector) and go into the index.
        """
        return self.writer.write_hashed(keys.session_hash(session_id), stream, tool, call_id, label,
                                        output_kind=output_kind,
                                        output_description=output_description)

    def write_hashed(self, shash: str, stream: Body, tool: str, call_id: CallId = None,
                     label: str | None = None, *, output_kind: OutputKind = "text",
                     output_description: str | None = None) -> ArtifactReference:
        """:meth:`write` for a caller that holds only the session's hash: a batch job that
        finishes a dead writer's live output (:func:`~s3spill.live.finish.finish_lost`)."""
        return self.writer.write_hashed(shash, stream, tool, call_id, label, output_kind=output_kind,
                                        output_description=output_description)

    def written_index(self, ref: ArtifactReference) -> ArtifactIndex | None:
        """The index this instance committed for ``ref`` (e.g. its CSV record table), if recent."""
        return self.writer.written_index(ref)
