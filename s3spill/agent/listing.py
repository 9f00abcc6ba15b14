"""``list_artifacts``: what this session has stored, newest first, a bounded number at a time.

Why a model needs it: a pointer can scroll out of the context (a trimmed history, a
summarised conversation, a restarted agent); without a listing the only way back to the
output is to re-run the command, which is what the pointer says not to do.

How: one listing of the session's ``artifacts/`` prefix (bodies only — a body exists only
once its index was created, so every listed body is a complete artifact), sorted by name,
whose leading UTC timestamp makes lexical order creation order to the second; then, for
the newest ``limit`` only (and the rest of the boundary's second), the verified index (the
same checks as a read), which gives the source id, size, lines and summary, and
``created_at`` to order artifacts of the same second. An artifact that vanished since the
listing (GC) or fails verification is counted as unreadable, never shown with made-up facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from s3spill import keys
from s3spill.artifacts.index import ArtifactIndex
from s3spill.artifacts.store import ArtifactStore
from s3spill.config import LiveConfig
from s3spill.context.pointer import one_line
from s3spill.context.quoting import no_ids
from s3spill.context.secrets import redact_text
from s3spill.errors import IntegrityError, InvalidRequest, NotFound
from s3spill.live.segments import read_state
from s3spill.live.summary import LiveSummary, summarize
from s3spill.models import ArtifactReference

DEFAULT_LIST_LIMIT = 20
MAX_LIST_LIMIT = 100
#: Length of an artifact name's leading UTC timestamp (``YYYYMMDDTHHMMSSZ``).
_STAMP = 16


@dataclass(frozen=True)
class ArtifactListing:
    """The newest artifacts of one session, and how many there are in all."""

    total: int
    artifacts: tuple[ArtifactReference, ...]
    unreadable: int = 0
    limit: int = DEFAULT_LIST_LIMIT
    #: Background commands of the session whose output is not an artifact yet (newest first).
    running: tuple[LiveSummary, ...] = ()

    def first(self, k: int) -> ArtifactListing:
        return ArtifactListing(self.total, self.artifacts[:k], self.unreadable, self.limit,
                               self.running)

    def render(self) -> str:
        shown = len(self.artifacts)
        plural = "s" if self.total != 1 else ""
        rows = []
        if self.running:
            rows.append(f"[{len(self.running)} background command output(s) not finished yet;"
                        " read or grep them by their live: id, since= for only what is new]")
            rows += [f"{r.live_id} | {r.status} | {r.committed_bytes:,} bytes, {r.line_count:,}"
                     " lines so far" for r in self.running]
        head = f"[{self.total:,} stored output{plural} in this session, newest first; showing {shown}]"
        rows.append(head)
        for ref in self.artifacts:
            who = one_line(ref.tool, 40) + (f" call {one_line(ref.call_id, 40)}" if ref.call_id else "")
            label = f" | {one_line(ref.label, 80)}" if ref.label else ""
            summary = one_line(no_ids(ref.summary), 160)  # tool text: the id in this row is ours
            rows.append(f"{ref.source_id} | {ref.created_at:%Y-%m-%dT%H:%M:%SZ} | {who}{label} | "
                        f"{ref.size_bytes:,} bytes, {ref.line_count:,} lines | {summary}")
        notes = []
        if self.total > shown + self.unreadable:
            notes.append(f"{self.total - shown - self.unreadable:,} older not shown (raise limit, "
                         f"at most {MAX_LIST_LIMIT})")
        if self.unreadable:
            notes.append(f"{self.unreadable} could not be read (deleted or failed verification)")
        rows.append("[" + ("; ".join(notes) if notes else "that is all") + "; read one with "
                    "its source_id]")
        return "\n".join(rows) + "\n"

    def structured(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "shown": len(self.artifacts),
            "unreadable": self.unreadable,
            "artifacts": [{
                "source_id": ref.source_id, "created_at": ref.created_at.isoformat(),
                "tool": ref.tool, "call_id": ref.call_id, "label": ref.label,
                "size_bytes": ref.size_bytes, "line_count": ref.line_count, "summary": ref.summary,
            } for ref in self.artifacts],
            "running": [{"source_id": r.live_id, "status": r.status,
                         "committed_bytes": r.committed_bytes, "line_count": r.line_count}
                        for r in self.running],
        }


def list_artifacts(artifacts: ArtifactStore, session_id: str,
                   limit: int = DEFAULT_LIST_LIMIT) -> ArtifactListing:
    """The session's ``limit`` newest artifacts, each from its verified index."""
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidRequest(f"limit must be 1-{MAX_LIST_LIMIT}")
    shash = keys.session_hash(session_id)
    names = []
    for info in artifacts.store.list(keys.session_prefix(shash) + "artifacts/"):
        parsed = keys.parse_key(info.key)
        if parsed.kind == "artifact" and parsed.session_hash == shash and parsed.name:
            names.append(parsed.name)
    names.sort(reverse=True)
    chosen = names[:limit]
    if len(names) > limit:  # the rest of the boundary's second, to order it by created_at
        second = names[limit - 1][:_STAMP]
        chosen += [n for n in names[limit:limit + MAX_LIST_LIMIT] if n[:_STAMP] == second]
    found: list[ArtifactReference] = []
    unreadable = 0
    for name in chosen:
        try:
            found.append(_reference(artifacts, session_id, shash, name))
        except (NotFound, IntegrityError):
            unreadable += 1
    found.sort(key=lambda ref: (ref.created_at, ref.name), reverse=True)
    if artifacts.view is not None:  # reads are masked: so are the summaries (first lines) they quote
        found = [ref.model_copy(update={"summary": masked_summary(ref.summary)}) for ref in found]
    return ArtifactListing(len(names), tuple(found[:limit]), unreadable, limit,
                           _running(artifacts, shash, limit))


def masked_summary(summary: str) -> str:
    """An index's summary (a first line, cut with "…", then its size) with its secrets
    masked; a token the cut split is masked as ``partial`` (the rest of the line is not
    at hand here)."""
    line, cut, size = summary.rpartition("… (")
    if not cut:
        return redact_text(summary)[0]
    return redact_text(line, cut_end=True)[0] + cut + size


def _running(artifacts: ArtifactStore, shash: str, limit: int) -> tuple[LiveSummary, ...]:
    """The session's live outputs that are not an artifact yet, newest first (one more LIST)."""
    names = sorted({p.name for p in (keys.parse_key(i.key) for i in
                                     artifacts.store.list(keys.session_prefix(shash) + "live/"))
                    if p.kind == "live_state" and p.name}, reverse=True)
    out: list[LiveSummary] = []
    for name in names[:limit]:
        try:
            state, _ = read_state(artifacts.store, keys.LiveId(shash, name))
        except (NotFound, IntegrityError):
            continue
        if state.final_source_id is None:
            out.append(summarize(state, LiveConfig(), state.committed_bytes))
    return tuple(out)


def _reference(artifacts: ArtifactStore, session_id: str, shash: str, name: str) -> ArtifactReference:
    """The verified reference of one listed name: the index names the source id, the read checks it."""
    try:
        raw = artifacts.store.get(keys.index_key(shash, name))
        claimed = ArtifactIndex.model_validate_json(raw)
    except ValueError:
        raise IntegrityError(f"the index of {name} does not parse") from None
    source_id = keys.SourceId(shash, name, claimed.sha256[:16])
    return artifacts.reference(source_id, session_id)
