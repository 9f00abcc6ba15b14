"""The gate the journal, the owner and GC pass before they write: does the store honour
create-once and compare-and-swap?

Why a gate: on a store that ignores ``If-None-Match`` / ``If-Match`` (s3rver, a
misconfigured gateway) the journal's compare-and-swap silently loses concurrent updates
and an owner slot can be overwritten, so a "committed" reference may vanish and GC would
delete its artifact. The verdict comes from the doctor's three conditional-write probes
(:mod:`s3spill.store.probes`, 12 requests) run once per store and process and kept here,
keyed by the store that answers the conditions
(:meth:`~s3spill.store.base.ObjectStore.conditions_source`): wrappers that forward
conditions unchanged share the verdict of the store they wrap.
"""

from __future__ import annotations

import secrets
import threading
import weakref
from typing import Literal

from s3spill.errors import S3SpillError, StoreCapabilityError, StoreUnavailable, UnsupportedOperation
from s3spill.log import get_logger
from s3spill.store.base import ObjectStore
from s3spill.store.capabilities import CapabilityReport, Probe
from s3spill.store.probes import SCRATCH, cleanup, generic_probes, refused, s3_parts

log = get_logger("s3spill.doctor")
_NEEDED = ("create_if_absent", "if_match_put", "if_match_put_missing")

#: A verdict: ``True`` when every needed probe was honoured, else the report naming the gaps.
Verdict = Literal[True] | CapabilityReport


class _Verdicts:
    """Verdicts by store identity, forgotten when the store is garbage-collected."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._by_id: dict[int, Verdict] = {}

    def get(self, store: ObjectStore) -> Verdict | None:
        return self._by_id.get(id(store))

    def put(self, store: ObjectStore, verdict: Verdict) -> None:
        try:
            weakref.finalize(store, self._by_id.pop, id(store), None)
        except TypeError:  # a store that cannot be weakly referenced is probed each time
            return
        self._by_id[id(store)] = verdict


_VERDICTS = _Verdicts()


def require_conditional_writes(store: ObjectStore, *, purpose: str) -> None:
    """Refuse (:class:`StoreCapabilityError`) a store that ignores create-once or CAS.

    The probes run on scratch keys once per store in this process; a probe that fails
    transiently is not a verdict: nothing is kept and the caller goes on (its own
    conditional writes will fail or retry as usual).
    """
    store = store.conditions_source()
    verdict = _VERDICTS.get(store)
    if verdict is None:
        with _VERDICTS.lock:
            verdict = _VERDICTS.get(store)
            if verdict is None:
                verdict = _probe(store)
                if verdict is None:
                    return
                _VERDICTS.put(store, verdict)
    if verdict is True:
        return
    missing = [p.title for p in verdict.probes if p.honoured is False]
    table = verdict.table()
    raise StoreCapabilityError(
        f"{store.url} does not honour {', '.join(missing)}: {purpose} refuses to run on a store "
        "that ignores conditional writes (updates would be lost silently). Run `s3spill doctor` "
        "for details.\n" + table, missing=missing, table=table)


def _probe(store: ObjectStore) -> Verdict | None:
    """True when honoured, the report when not, None when the store could not be probed now."""
    scratch = f"{SCRATCH}/{secrets.token_hex(8)}"
    probes: list[Probe] = []
    try:
        for fn in generic_probes(store, scratch):
            if fn.__name__ not in _NEEDED:
                continue
            try:
                probes.append(fn())
            except StoreUnavailable:
                return None
            except UnsupportedOperation:
                probes.append(refused(fn.__name__))
            except S3SpillError as exc:
                log.warning("store.capability_probe_failed", probe=fn.__name__, error=type(exc).__name__)
                return None
    finally:
        cleanup(store, s3_parts(store), scratch)
    if all(p.honoured for p in probes):
        return True
    report = CapabilityReport(store_url=store.url, kind=store.kind, probes=probes)
    log.warning("store.CONDITIONAL_WRITES_NOT_HONOURED", store=store.url,
                missing=[p.name for p in probes if p.honoured is False])
    return report
