"""Artifacts: immutable tool outputs and their sidecar indexes, read back by verified ranges.

``store`` writes an artifact once (``If-None-Match: *``) and commits it by its create-once
index; ``index`` is that sidecar's model; ``paging``/``search`` answer page and grep
requests from verified chunks; :mod:`s3spill.textview` is the display form both share (and
the context side's previews). The package
sits on :mod:`s3spill.store` and knows nothing of the journal or GC.
"""

from s3spill.artifacts.store import ArtifactStore

__all__ = ["ArtifactStore"]
