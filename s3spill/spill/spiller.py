"""What an agent harness calls after every tool call: decide what the model sees.

:meth:`Spiller.externalize` reads a tool's output exactly once. Up to the tool's
threshold it only buffers (it cannot know before); an output that stays under every
budget comes back inline and is not stored. Past the threshold, the buffered prefix
and the rest of the stream go, chunk by chunk, both to a :class:`TextRetainer`
(head and tail for the preview) and to the artifact store (the full text), so memory
stays bounded whatever the size. The model gets the pointer rendered by
:mod:`s3spill.context.pointer`: head, gap, tail, and a notice with the locator.

It fails open, honestly (docs/design-notes.md "Hard cap and soft budget"): when the store
fails, stalls, or misses the deadline, the result is the hard-capped head/tail with a
notice that the full output could NOT be saved — never a locator that does not exist
— and a warning in the log. No exception reaches the caller. The added latency is
bounded: the store may stall the stream for at most ``store_deadline`` seconds, and
once the output has ended we wait at most ``store_deadline`` plus the time the upload
needs at ``min_upload_rate`` (see :mod:`s3spill.spill.upload` for how a blocking
boto3 call is left behind without pointing at what it may still write).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from s3spill.artifacts.store import ArtifactStore
from s3spill.config import LiveConfig
from s3spill.context.block_plan import Block, ImageBlock
from s3spill.context.budget import TurnBudgetReport, TurnResult, enforce_turn_budget
from s3spill.context.policy import SpillPolicy
from s3spill.context.secrets import StreamRedactor
from s3spill.fleet.policy_file import LoadedPolicy, load_policy
from s3spill.fleet.quota import Quota, QuotaGuard
from s3spill.keys import session_hash
from s3spill.leases.journal import LeaseJournal
from s3spill.leases.liveness import LivenessMark
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.spill.block_spill import BlocksResult, externalize_blocks
from s3spill.spill.job import CallId, ExitCode, Note, SpillJob
from s3spill.spill.result import SpillResult
from s3spill.spill.sink import SpillSink
from s3spill.spill.source import Output
from s3spill.store.base import ObjectStore
from s3spill.telemetry import tool_span
from s3spill.usage.events import SpillRow, UsageEvent, blocks_event, spill_row, utf8_len
from s3spill.usage.recorder import UsageSink

if TYPE_CHECKING:
    from s3spill.live.run import LiveHandle, LiveSource

__all__ = ["SpillResult", "Spiller"]

MiB = 1024 * 1024
log = get_logger("s3spill.spill.spiller")

class _NotStored(Exception):
    """The per-turn callback's way of saying "keep this one inline"."""


class Spiller:
    """Externalize tool output for one session; thread-safe, one instance per session.

    ``store`` is an :class:`~s3spill.store.base.ObjectStore` or an already built
    :class:`~s3spill.artifacts.store.ArtifactStore`. ``journal`` is the session's lease
    journal (anything with ``touch``; by default the session's
    :class:`~s3spill.leases.journal.LeaseJournal` in the same store, ``None`` for none):
    after a successful spill its ``last_active`` is refreshed at most once per
    ``touch_interval`` seconds, on the upload thread, off the caller's path — GC keeps
    everything of a session active within its TTL, so a live session's fresh artifacts
    are safe before any claim on them is published. ``usage`` receives one event per
    result (:mod:`s3spill.usage`; None: no usage records).
    """

    def __init__(
        self,
        store: ObjectStore | ArtifactStore,
        session_id: str,
        policy: SpillPolicy | None = None,
        *,
        journal: LivenessMark | Literal["auto"] | None = "auto",
        touch_interval: float = 60.0,
        min_upload_rate: float = 32 * MiB,
        queue_depth: int = 4,
        quota: Quota | None = None,
        usage: UsageSink | None = None,
    ) -> None:
        if isinstance(store, ObjectStore):
            store = ArtifactStore(store, getattr(store, "config", None), session_id=session_id)
        if journal == "auto":
            journal = LeaseJournal(store.store, session_id, store.config)
        self.artifacts = store
        self.session_id = session_id
        self.journal = journal
        self.policy = policy or SpillPolicy()
        self.usage = usage
        #: Quota counters and refusals of this session (None: no quota).
        self.quota = QuotaGuard(store.store, session_hash(session_id), quota) if quota else None
        self.sink = SpillSink(store, session_id, store_deadline=self.policy.store_deadline,
                              journal=journal, touch_interval=touch_interval,
                              min_upload_rate=min_upload_rate, queue_depth=queue_depth,
                              quota=self.quota)

    @classmethod
    def from_config(cls, session_id: str, store: ObjectStore | ArtifactStore | None = None, *,
                    config: str | os.PathLike[str] | None = None, harness: str | None = None,
                    base: SpillPolicy | None = None, policy: LoadedPolicy | None = None,
                    **kwargs: Any) -> Spiller:
        """A Spiller under the fleet policy (:mod:`s3spill.fleet.policy_file`): the file named
        by ``config``, ``$S3SPILL_CONFIG`` or the config dirs, and ``S3SPILL_*`` variables.

        ``base`` is the caller's own defaults (a hook's thresholds); what the operator set
        replaces them, ``[harness.<harness>]`` rules included. The store is the policy's
        unless given; the quota is the policy's. Raises :class:`~s3spill.errors.PolicyError`
        for a policy that does not check (naming file, line and key).
        """
        loaded = policy or load_policy(config)
        if store is None:
            store = loaded.open_store()
        return cls(store, session_id, loaded.spill_policy(base, harness), quota=loaded.quota(), **kwargs)

    def externalize(
        self,
        output: Output,
        tool: str,
        call_id: CallId = None,
        exit_code: ExitCode = None,
        spillable: bool = True,
        *,
        label: str | None = None,
        force: bool = False,
        max_chars: int | None = None,
        note: Note = None,
    ) -> SpillResult:
        """The context text for one tool result; stores the full output when it is too large.

        ``output`` is consumed exactly once. ``exit_code`` may be a callable, asked
        once the output has ended (a running command's status is known only then; a
        non-zero one makes the preview favour the tail). ``spillable=False`` (e.g. a
        paged file read that is already on disk) is never copied: it is returned
        inline, clipped to the hard cap. ``force`` stores a spillable output even under
        its threshold (the per-turn budget uses it). ``max_chars`` narrows the hard cap for
        this result (the per-turn budget's share); a pointer never gives up its notice for
        it, so the smallest pointer (notice, no preview) is the floor. ``note`` is one
        sentence the notice adds about how the output was captured; like ``exit_code`` it
        may be a callable, asked once the output has ended, and so may ``call_id``. Never raises for store or
        stream failures.
        """
        result = self._spill(output, tool, call_id, exit_code, spillable, label=label, force=force,
                             max_chars=max_chars, note=note)
        if self.usage is not None:
            self._record(result)
        return result

    def _spill(self, output: Output, tool: str, call_id: CallId = None, exit_code: ExitCode = None,
               spillable: bool = True, *, label: str | None = None, force: bool = False,
               max_chars: int | None = None, note: Note = None) -> SpillResult:
        """:meth:`externalize` without its usage event (a block result records one of its own)."""
        spillable = spillable and not self.policy.never_spills(tool)  # the fleet policy's never_spill
        job = SpillJob(self.sink, self.policy, output, tool, call_id, exit_code, spillable, label, force,
                       max_chars, note)
        with tool_span("spill", tool):
            return job.run()

    def _record(self, result: SpillResult) -> None:
        """Queue the usage event of one result; fail open (losing usage never fails a tool call).

        Only the time is taken now: the event is built later, on the recorder's thread
        (:meth:`UsageRecorder.defer`), where building many in a row is cheaper than one
        right after a spill. The maker is the plain function (``Spiller._event``), not a bound
        method or a ``functools.partial``: each is one more object made on a cold cache.
        """
        assert self.usage is not None
        try:
            self.usage.defer(Spiller._event, self, result, time.time())
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, the result stands
            log.warning("usage.event_failed", error=type(exc).__name__)

    def _event(self, result: SpillResult, at: float) -> SpillRow:
        """The spill's usage event, as the row the recorder writes (:class:`SpillRow`)."""
        index = self.artifacts.written_index(result.artifact) if result.artifact else None
        return spill_row(self.sink.session_hash, result, at=at,
                         stored_bytes=index.stored_size if index else None,
                         threshold=self.policy.for_tool(result.tool).threshold)

    def enforce_turn_budget(
        self,
        results: Sequence[TurnResult],
        per_result: int = 100_000,
        turn_total: int = 200_000,
        context_window: int | None = None,
        *,
        history_chars: int = 0,
    ) -> TurnBudgetReport:
        """:func:`~s3spill.context.budget.enforce_turn_budget` with this Spiller spilling.

        Largest first; a result that is not ``spillable`` (a paged file read) or is
        already ``spilled`` (its content is a pointer) is never copied. A result the
        store could not take stays inline (listed in ``failed``): an over-budget turn
        beats a lost result. Each replaced result carries its :class:`SpillResult` in
        ``extra`` and its source id in ``locator``; its preview is sized to the share of
        the turn it may take, so it always shrinks.
        """
        candidates = [replace(r, spillable=r.spillable and not r.spilled,
                              locator=r.locator or self._locator(r.extra)) for r in results]

        def spill(result: TurnResult) -> TurnResult:
            out = self.externalize(result.content, result.tool, result.call_id, result.exit_code,
                                   force=True, max_chars=result.max_chars)
            if not out.spilled:
                raise _NotStored(out.degraded_reason or "not stored")
            return replace(result, content=out.context_text, extra=out, locator=self._locator(out))

        report = enforce_turn_budget(candidates, per_result, turn_total, context_window, spill=spill,
                                     history_chars=history_chars)
        restored = [replace(new, spillable=old.spillable) for new, old in zip(report.results, results,
                                                                               strict=True)]
        if not report.within_budget:
            log.warning("spill.turn_over_budget", session_hash=self.sink.session_hash,
                        over_by=report.over_by, why=report.why_over)
        if report.trimmed:
            log.warning("spill.turn_emergency_trim", session_hash=self.sink.session_hash,
                        trimmed=len(report.trimmed), window_chars=report.window_chars)
        return replace(report, results=restored)

    def _locator(self, extra: object) -> str | None:
        """How the model reads a stored result again, for the emergency trim's marker."""
        if isinstance(extra, SpillResult) and extra.artifact is not None:
            return f'{self.policy.read_tool}(source_id="{extra.artifact.source_id}")'
        return None

    def externalize_blocks(self, blocks: Sequence[Block], tool: str, call_id: str | None = None,
                           exit_code: int | None = None) -> BlocksResult:
        """The same for a result made of text and image blocks (see :mod:`s3spill.spill.block_spill`).

        Images are priced with the policy's ``image_pricer``; an omitted image is stored
        as its own artifact and named in the notice by locator.
        """
        result = externalize_blocks(self.sink, self.policy, self._spill, blocks, tool, call_id, exit_code)
        if self.usage is not None:
            self._record_blocks(blocks, result, tool, call_id)
        return result

    def _record_blocks(self, blocks: Sequence[Block], result: BlocksResult, tool: str,
                       call_id: str | None) -> None:
        """One usage event for a block result: its sizes and what was shown (images by a line
        naming them), taken now so the maker holds no image; fail open."""
        assert self.usage is not None
        try:
            raw = sum(len(b.data) if isinstance(b, ImageBlock) else utf8_len(b.text) for b in blocks)
            shown = "".join(b.data_line() if isinstance(b, ImageBlock) else b.text for b in result.blocks)
            refs = [r for r in (result.artifact, *result.images.values()) if r is not None]
            self.usage.defer(self._blocks_event, result.artifact, refs, tool, call_id, raw, shown,
                             result.degraded_reason, time.time())
        except Exception as exc:  # noqa: BLE001 - whatever went wrong, the result stands
            log.warning("usage.event_failed", error=type(exc).__name__)

    def _blocks_event(self, ref: ArtifactReference | None, refs: list[ArtifactReference], tool: str,
                      call_id: str | None, raw: int, shown: str, degraded: str | None,
                      at: float) -> UsageEvent:
        indexes = [self.artifacts.written_index(r) for r in refs]
        stored = sum(i.stored_size for i in indexes if i is not None) if refs else None
        return blocks_event(self.sink.session_hash, tool, ref, call_id=call_id, raw_bytes=raw, shown=shown,
                            stored_bytes=stored,
                            threshold=self.policy.for_tool(tool).threshold, spilled=bool(refs),
                            degraded=degraded, at=at)

    def start(self, source: LiveSource, tool: str = "bash", *, label: str | None = None,
              config: LiveConfig | None = None, env: dict[str, str] | None = None,
              cwd: str | None = None) -> LiveHandle:
        """Run a command (argv list) or drain a stream in the background, readable as it runs.

        Returns at once; the handle's ``source_id`` (``live:...``) reads and greps what is
        committed so far (see :mod:`s3spill.live.run`); when the run ends its output is
        an ordinary artifact. The session's liveness mark is kept fresh meanwhile.
        """
        from s3spill.live.run import start_live  # here: a Spiller that only externalizes never loads it

        cap = self.policy.stored_cap(tool)  # the one cap, background outputs too
        config = config or LiveConfig(max_bytes=cap)
        if config.max_bytes > cap:
            config = LiveConfig(**{**config.model_dump(), "max_bytes": cap})  # re-checked: head clamped
        return start_live(self.artifacts.store, self.session_id, source, tool, label=label,
                          config=config, transfer=self.artifacts.config, journal=self.journal,
                          env=env, cwd=cwd,
                          mask=StreamRedactor() if self.policy.secrets == "at_rest" else None,
                          on_stored=self.quota.record if self.quota is not None else None)

    def close(self, timeout: float | None = None) -> None:
        """Wait (bounded) for follow-up work of accepted uploads, e.g. the liveness mark."""
        self.sink.close(timeout)

    def __enter__(self) -> Spiller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
