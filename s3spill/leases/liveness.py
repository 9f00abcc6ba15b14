"""The one thing a writer needs of the lease journal while it works: a liveness mark.

A spill or a live output that runs for minutes touches the session's ``last_active`` so
GC does not expire the session under it; the writers depend on this protocol, not on
:class:`~s3spill.leases.journal.LeaseJournal`, so they can run without a journal.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["LivenessMark"]


class LivenessMark(Protocol):
    """A rate-limited ``last_active`` mark (the lease journal implements it)."""

    def touch(self, min_interval: float = ...) -> bool: ...
