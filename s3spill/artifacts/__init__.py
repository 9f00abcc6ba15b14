"""Artifacts: immutable tool outputs and their sidecar indexes, read back by verified ranges.

``store`` writes an artifact once (``If-None-Match: *``) and commits it by its create-once
index; ``index`` is that sidecar's model; ``paging``/``search`` answer page and grep
requests from verified chunks; :mod:`s3spill.textview` is the display form both share (and
the context side's previews). The package
sits on :mod:`s3spill.store` and knows nothing of the journal or GC.

Importing the package loads nothing (PEP 562): a sub-module's constants
(``s3spill.artifacts.paging.DEFAULT_LIMIT`` for the CLI's flags) come without the store.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from s3spill.artifacts.store import ArtifactStore as ArtifactStore

__all__ = ["ArtifactStore"]


def __getattr__(name: str) -> object:
    if name != "ArtifactStore":
        raise AttributeError(f"module 's3spill.artifacts' has no attribute {name!r}")
    from s3spill.artifacts.store import ArtifactStore

    return ArtifactStore
