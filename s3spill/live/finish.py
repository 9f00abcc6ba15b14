"""Finishing a live artifact: its committed segments become one ordinary artifact.

Why a copy and not an index over the segments: an ordinary artifact is a body and a
create-once index, and every read, grep, reference, journal claim and GC decision is
built on that shape; segments cut by time have arbitrary sizes that the fixed-chunk
index cannot describe. Streaming the verified segments through the artifact writer
costs one read and one write of the output, with bounded memory, once, and leaves
nothing new for the other paths to learn.

Order, and what a SIGKILL at each step leaves:

1. the state is terminal (``exited``/``killed``, or ``lost`` when a finisher takes over
   from a dead writer by CAS) — readers read the segments;
2. the artifact is written (failpoint ``live.during_final_commit`` after it) — an
   unreferenced artifact nobody names yet: GC collects it after its TTLs like any other;
3. the state names the artifact (CAS) — readers of the live id are sent to it;
4. the segments are deleted (conditionally, each on its listed ETag).

Every step can be run again: :func:`finish_live` on a state in any of these conditions
completes it (``s3spill status --finish``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from s3spill import keys
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import LiveConfig, TransferConfig
from s3spill.errors import IntegrityError, InvalidRequest, NotFound, PreconditionFailed, StoreError
from s3spill.failpoints import declare, failpoint
from s3spill.live.segments import iter_committed, read_state
from s3spill.live.state import LiveState
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.store.base import ObjectStore

log = get_logger("s3spill.artifacts.live")

DURING_FINAL_COMMIT = declare("live.during_final_commit",
                              "a live output is stored as an artifact; its state does not name it yet")
_ATTEMPTS = 20
#: Frame workers while a finished output is copied into its artifact.
FINISH_CONCURRENCY = 1
#: Told of each final copy once it is stored (a quota's counters): every copy written,
#: an orphan of a lost race too, since GC credits back whatever it deletes.
OnStored = Callable[[ArtifactReference], None]


def cas_state(store: ObjectStore, live: keys.LiveId,
              change: Callable[[LiveState], dict[str, Any] | None]) -> LiveState:
    """Read, change, write with If-Match; re-read on a loss. ``change`` returning None: no write.

    For the processes beside the writer (``stop``, a finisher); an unknown outcome is
    decided by reading back this call's own writer token and version.
    """
    token = secrets.token_hex(8)
    key = keys.live_state_key(live.session_hash, live.name)
    for _ in range(_ATTEMPTS):
        state, etag = read_state(store, live)
        update = change(state)
        if update is None:
            return state
        new = LiveState.model_validate(state.model_dump() | update | {
            "version": state.version + 1, "writer": token})
        try:
            store.put_if_match(key, new.to_bytes(), etag, content_type="application/json")
        except PreconditionFailed:
            continue
        except StoreError:
            landed, _ = read_state(store, live)
            if landed.writer == token and landed.version == new.version:
                return landed
            continue
        return new
    raise StoreError(f"{live}: the live state could not be written after {_ATTEMPTS} attempts")


def write_final(store: ObjectStore, state: LiveState,
                transfer: TransferConfig | None = None) -> ArtifactReference:
    """Stream the committed segments, verified, into an ordinary artifact of their session.

    One frame worker (:data:`FINISH_CONCURRENCY`): the finisher is the supervisor, whose
    memory must stay bounded whatever the output's size, and the copy is on nobody's path
    (readers read the segments until the state names the artifact). The upload's parts
    follow the store's own config (the supervisor opens its store with small ones).
    """
    base = transfer or getattr(store, "config", None) or TransferConfig()
    arts = ArtifactStore(store, base.model_copy(update={
        "max_concurrency": min(FINISH_CONCURRENCY, base.max_concurrency)}))
    ref = arts.write_hashed(state.session_hash, iter_committed(store, state, gap_marker=True),
                            state.tool, label=state.label or state.command)
    failpoint(DURING_FINAL_COMMIT)
    return ref


def delete_segments(store: ObjectStore, live: keys.LiveId) -> int:
    """Delete every segment and table object of a finished live artifact; the number deleted."""
    done = 0
    for info in store.list(keys.live_prefix(live.session_hash, live.name)):
        if keys.parse_key(info.key).kind not in ("live_segment", "live_table"):
            continue
        try:
            store.delete_if_match(info.key, info.etag)
            done += 1
        except (NotFound, PreconditionFailed):
            continue
        except StoreError as exc:  # left for the next finish; nothing reads them any more
            log.warning("live.segment_delete_failed", key=info.key, error=type(exc).__name__)
    return done


def finish_live(store: ObjectStore, session_id: str, live: keys.LiveId, *,
                config: LiveConfig | None = None, transfer: TransferConfig | None = None,
                now: datetime | None = None, on_stored: OnStored | None = None) -> LiveState:
    """Complete a live artifact whatever step its writer reached; idempotent.

    A ``running`` one is taken over only when its heartbeat is older than ``lost_after``
    (it turns ``lost`` by CAS, which fences the old writer); a terminal one without its
    artifact is finished here. Raises :class:`InvalidRequest` while the writer is alive.
    ``on_stored`` is told of the final copy this call stored (none when it was there).
    """
    live.require_session(session_id)
    return _finish(store, live, config or LiveConfig(), transfer, now or datetime.now(UTC), on_stored)


def _finish(store: ObjectStore, live: keys.LiveId, config: LiveConfig,
            transfer: TransferConfig | None, now: datetime, on_stored: OnStored | None = None) -> LiveState:
    state, _ = read_state(store, live)
    if state.final_source_id is None:
        if state.status == "running":
            if state.effective_status(now, config.lost_after) != "lost":
                raise InvalidRequest(f"{live} is still running (heartbeat"
                                     f" {state.heartbeat:%H:%M:%S} UTC); stop it first")

            def mark_lost(s: LiveState) -> dict[str, Any] | None:
                if s.status != "running":
                    return None
                if s.effective_status(now, config.lost_after) != "lost":
                    raise InvalidRequest(f"{live} came back to life (fresh heartbeat)")
                return {"status": "lost"}

            state = cas_state(store, live, mark_lost)
        if state.final_source_id is None:
            ref = write_final(store, state, transfer)
            if on_stored is not None:
                on_stored(ref)

            def name_final(s: LiveState) -> dict[str, Any] | None:
                if s.final_source_id is not None:
                    return None  # another finisher won; ours is an unnamed orphan for GC
                if s.spans != state.spans:
                    raise InvalidRequest(f"{live}: its segments changed while it was finished")
                return {"final_source_id": ref.source_id}

            state = cas_state(store, live, name_final)
            log.info("live.finished", live_id=str(live), source_id=state.final_source_id,
                     status=state.status)
    delete_segments(store, live)
    return state


def finish_lost(store: ObjectStore, *, older_than: float, session_hash: str | None = None,
                config: LiveConfig | None = None, transfer: TransferConfig | None = None,
                now: datetime | None = None) -> list[LiveState]:
    """Finish every live output whose writer is gone for ``older_than`` seconds; the states.

    For a batch job beside GC (``s3spill finish-lost``): GC never deletes live objects, so
    a supervisor that died would leave its segments forever. A state counts as gone when
    its heartbeat (running) or its last write (terminal, never named its artifact) is older
    than ``older_than`` — and, running, also past ``lost_after``. What it committed becomes
    an ordinary artifact, which GC then judges by its TTLs like any other; leftover segments
    of finished ones are deleted. A state that fails to finish is logged and skipped.
    """
    config = config or LiveConfig()
    now = now or datetime.now(UTC)
    prefix = keys.session_prefix(session_hash) if session_hash else keys.SESSIONS + "/"
    done: list[LiveState] = []
    for info in store.list(prefix):
        parsed = keys.parse_key(info.key)
        if parsed.kind != "live_state" or parsed.session_hash is None or parsed.name is None:
            continue
        live = keys.LiveId(parsed.session_hash, parsed.name)
        try:
            state, _ = read_state(store, live)
            stale = (now - state.heartbeat).total_seconds() >= older_than
            if state.final_source_id is not None:
                delete_segments(store, live)
                continue
            if not stale or state.effective_status(now, config.lost_after) == "running":
                continue
            done.append(_finish(store, live, config, transfer, now))
        except (StoreError, InvalidRequest, IntegrityError) as exc:
            log.warning("live.finish_lost_failed", live_id=str(live), error=type(exc).__name__)
    return done
