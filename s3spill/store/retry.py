"""Retrying transient store faults: exponential backoff, full jitter, one overall deadline.

Why a layer of our own on top of botocore's retries: botocore retries each HTTP
request a couple of times, but it knows nothing about our deadline, and it cannot tell
that a retried conditional PUT answering 412 may be our own first attempt. This layer
bounds the whole operation in time (``TransferConfig.deadline``), counts attempts for
the log, and turns "still failing" into :class:`~s3spill.errors.StoreUnavailable` — an
*unknown* outcome that callers must resolve, never a loss.

Only faults classified as transient are retried here; everything else (412, 404, 409,
403, bad digests) is raised at once so the caller can apply its own semantics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_random_exponential,
)

from s3spill.config import TransferConfig
from s3spill.errors import StoreUnavailable
from s3spill.log import get_logger

T = TypeVar("T")
log = get_logger("s3spill.store.retry")


@dataclass
class Attempts:
    """Counts the requests one logical operation made, for the log and for ambiguity checks."""

    count: int = 0
    #: True once any attempt may have reached the server and failed without an answer,
    #: or botocore retried underneath us: a later 412/404 may then be our own doing.
    ambiguous: bool = False
    errors: list[str] = field(default_factory=list)


class RetryPolicy:
    """Runs a callable until it succeeds, fails permanently, or the budget runs out."""

    def __init__(self, config: TransferConfig, is_transient: Callable[[BaseException], bool]) -> None:
        self.config = config
        self.is_transient = is_transient

    def run(
        self, fn: Callable[[], T], *, operation: str, key: str | None = None,
        attempts: Attempts | None = None, deadline: float | None = None,
    ) -> T:
        """Call ``fn``; retry transient faults; raise :class:`StoreUnavailable` when exhausted."""
        cfg = self.config
        tally = attempts if attempts is not None else Attempts()

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.info("store.retry", operation=operation, key=key, attempt=state.attempt_number,
                     error=type(exc).__name__ if exc else None,
                     sleep=round(state.upcoming_sleep, 3))

        retrying = Retrying(
            stop=stop_after_attempt(cfg.max_attempts)
            | stop_before_delay(deadline if deadline is not None else cfg.deadline),
            wait=wait_random_exponential(multiplier=cfg.backoff_base, max=cfg.backoff_max),
            retry=retry_if_exception(self.is_transient),
            before_sleep=before_sleep,
            reraise=True,
        )

        def attempt() -> T:
            tally.count += 1
            try:
                result = fn()
            except BaseException as exc:
                if self.is_transient(exc):
                    tally.ambiguous = True
                    tally.errors.append(type(exc).__name__)
                elif botocore_retries(exc):
                    tally.ambiguous = True
                raise
            if botocore_retries(result):
                tally.ambiguous = True
            return result

        try:
            return retrying(attempt)
        except Exception as exc:
            if self.is_transient(exc):
                raise StoreUnavailable(
                    f"{operation} failed after {tally.count} attempt(s): {type(exc).__name__}: {exc}",
                    key=key,
                ) from exc
            raise


def botocore_retries(obj: Any) -> int:
    """How many times botocore retried the request behind a response or a ClientError."""
    meta: Any = None
    if isinstance(obj, dict):
        meta = obj.get("ResponseMetadata")
    else:
        response = getattr(obj, "response", None)
        if isinstance(response, dict):
            meta = response.get("ResponseMetadata")
    if isinstance(meta, dict):
        return int(meta.get("RetryAttempts", 0) or 0)
    return 0
