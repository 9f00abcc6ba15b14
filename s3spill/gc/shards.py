"""Which part of the key space one GC run lists: a session, a shard, or the whole store.

Why contiguous ranges: a shard that keeps every session whose hash falls in its share
must not page through everyone else's keys to find them. Session hashes are hex, and
both backends list in key order, so shard K of N owns one contiguous range of the
first 32 bits of the hash — ``[ceil(K·2³²/N), ceil((K+1)·2³²/N))`` — and lists exactly
that slice of ``v1/sessions/`` and of ``v1/owner/`` (S3 ``StartAfter`` seeks to it).
N shards together page through the store once, not N times.

Every key is listed by exactly one shard. The two hashed prefixes are cut at the
range boundaries (an off-layout key under them, say ``v1/sessions/notahash/x``, goes to
the shard whose slice it sorts into); everything outside them — stored plans, locks,
strangers' keys — is listed by shard 0, whose first slices extend over the gaps before
and between the hashed prefixes and which also lists the gap after them. One shard sends
its slices' pages plus at most three more LIST requests, whatever the store's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from s3spill.errors import CleanupRefused
from s3spill.gc.models import CleanupScope, hash_bounds
from s3spill.keys import OWNER, SESSIONS, session_prefix
from s3spill.store.base import ObjectInfo, ObjectStore

#: Sorts after every key that starts with a given prefix and holds no U+10FFFF (none of ours).
_BEYOND = "\U0010ffff"
_OWNER, _SESSIONS = f"{OWNER}/", f"{SESSIONS}/"
assert _OWNER < _SESSIONS, "the intervals below assume owner/ sorts before sessions/"


@dataclass(frozen=True)
class KeyRange:
    """Keys starting with ``prefix``, after ``start_after`` and up to ``last`` (both optional)."""

    prefix: str
    start_after: str | None = None
    #: Inclusive upper bound; ``None``: to the end of the prefix.
    last: str | None = None

    def contains(self, key: str) -> bool:
        return (key.startswith(self.prefix)
                and (self.start_after is None or key > self.start_after)
                and (self.last is None or key <= self.last))


def _slice(prefix: str, index: int, count: int) -> tuple[str, str]:
    """``(start_after, last)`` of a shard's slice of a hashed prefix.

    A key of a session whose hash starts with ``lo8`` is longer than ``prefix+lo8``, so it
    sorts after it; one whose hash starts with ``hi8`` sorts after ``prefix+hi8``. The
    first slice starts at the prefix itself, the last ends past every key under it (a key
    past that, with U+10FFFF in it, falls in shard 0's gap after the prefix).
    """
    lo, hi = hash_bounds(index, count)
    return (prefix if index == 0 else f"{prefix}{lo:08x}",
            prefix + _BEYOND if index == count - 1 else f"{prefix}{hi:08x}")


def scope_ranges(scope: CleanupScope) -> list[KeyRange]:
    """The key ranges a run over ``scope`` lists, in key order.

    Shard 0 also takes the gaps around the hashed prefixes: everything before its owner
    slice, between the owner and the sessions prefix, and after the sessions prefix. The
    bounds are inclusive at the top and exclusive at the bottom, and each shard's top is
    the next one's bottom, so the intervals of all shards tile the key space.
    """
    if scope.session_hash is not None:
        return [KeyRange(session_prefix(scope.session_hash))]
    k, n = scope.shard_index, scope.shard_count
    intervals: list[tuple[str | None, str | None]]
    if n == 1:
        intervals = [(None, None)]
    elif k == 0:
        intervals = [(None, _slice(_OWNER, 0, n)[1]),
                     (_OWNER + _BEYOND, _slice(_SESSIONS, 0, n)[1]),
                     (_SESSIONS + _BEYOND, None)]
    else:
        intervals = [_slice(_OWNER, k, n), _slice(_SESSIONS, k, n)]
    ranges = []
    for after, last in intervals:
        shared = next((p for p in (_OWNER, _SESSIONS)
                       if after is not None and last is not None
                       and after.startswith(p) and last.startswith(p)), "")
        ranges.append(KeyRange(shared, after, last))
    return ranges


def list_range(store: ObjectStore, r: KeyRange) -> Iterator[ObjectInfo]:
    """List one range, stopping at its end (S3 sends no page past it)."""
    listing = store.list(r.prefix) if r.start_after is None else store.list_after(r.prefix, r.start_after)
    for info in listing:
        if r.last is not None and info.key > r.last:
            return
        if r.contains(info.key):
            yield info


def list_scope(store: ObjectStore, scope: CleanupScope) -> Iterator[ObjectInfo]:
    """Every object ``scope`` covers, once each, in strictly increasing key order.

    The order is checked as the listing streams (O(1) memory): objects of one session are
    contiguous only in a listing in key order, and one that is not is refused rather than
    half-trusted.
    """
    previous: str | None = None
    for r in scope_ranges(scope):
        for info in list_range(store, r):
            if previous is not None and info.key <= previous:
                raise CleanupRefused("the store's listing is not in key order; refusing to plan")
            previous = info.key
            yield info


__all__ = ["KeyRange", "list_range", "list_scope", "scope_ranges"]
