"""The usage event of a page or grep the CLI printed, shared by the full and the fast read.

One small object, written after the answer is out; fail open (a lost event never fails
the call). Not for ``--show-secrets``: that is an operator's unmasked view, not what a
model was shown (the callers decide). Its own module, importing nothing at load, so the
fast read (:mod:`.read_fast`) records exactly what ``read`` and ``grep`` record.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from s3spill.store.base import ObjectStore

__all__ = ["record_usage"]


def record_usage(store: ObjectStore, session: str, source_id: str, op: str, text: str,
                 facts: dict[str, object]) -> None:
    """Record ``text`` (what ``s3spill {op}`` printed for ``source_id``) as a usage event."""
    try:
        from s3spill.usage.events import grep_event, read_event
        from s3spill.usage.recorder import record_answer, usage_recorder

        usage = usage_recorder(store, batch=False)
        if usage is not None:
            record_answer(usage, read_event if op == "read" else grep_event, session, source_id,
                          f"s3spill {op}", text, facts)
    except Exception as exc:  # noqa: BLE001 - losing usage never fails a call
        from s3spill.log import get_logger

        get_logger("s3spill.cli.artifacts").warning("usage.event_failed", error=type(exc).__name__)
