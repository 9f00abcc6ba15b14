"""The async Spiller: the same spill for an asyncio harness, awaited.

Why threads and not a second, native-async implementation: the store layer is boto3 (or
the file system), which blocks, and the Spiller's guarantees — one pass, bounded memory,
a bounded added latency, never an exception in the agent's turn — are built and tested
once, on the blocking path. Each call here runs that path on a worker thread
(:func:`asyncio.to_thread`), so a spill never stalls the event loop that the agent
framework's other tool calls and model streams run on.

What is async-native is the output: :meth:`AsyncSpiller.externalize` also takes an
async iterator of chunks or an ``asyncio.StreamReader`` (``asyncio.subprocess`` stdout,
read in 1 MiB chunks rather than lines, so a line over the reader's limit is no error)
and an async exit-code callable (``proc.wait``). The worker thread pulls each chunk from
the event loop when it needs it, so memory stays bounded exactly as with a blocking stream.

Cancelling the awaiting task does not cancel the worker: the Spiller finishes (it never
raises), and what it stored stays stored — never lose a byte. The result is dropped.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

from s3spill.context.block_plan import Block
from s3spill.context.budget import TurnBudgetReport, TurnResult
from s3spill.spill.block_spill import BlocksResult
from s3spill.spill.job import ExitCode
from s3spill.spill.result import SpillResult
from s3spill.spill.source import Output
from s3spill.spill.spiller import Spiller

__all__ = ["AsyncExitCode", "AsyncOutput", "AsyncSpiller", "aexternalize"]

_CHUNK = 1024 * 1024
#: What the async ``externalize`` accepts: anything the Spiller takes, or an async stream.
AsyncOutput = Output | AsyncIterable[bytes | str]
#: An exit code, a callable asked when the output has ended, or an async one (``proc.wait``).
AsyncExitCode = ExitCode | Callable[[], Awaitable[int | None]]


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """A StreamReader in fixed-size chunks: iterating it yields lines, and a line over its
    64 KiB limit raises — a minified bundle must not turn a spill into a failure."""
    while chunk := await reader.read(_CHUNK):
        yield chunk


def _bridge_stream(source: AsyncIterable[bytes | str],
                   loop: asyncio.AbstractEventLoop) -> Iterator[bytes | str]:
    """A blocking iterator (for the worker thread) over an async one (on ``loop``)."""
    iterator = (_chunks(source) if isinstance(source, asyncio.StreamReader) else source).__aiter__()

    async def step() -> tuple[bool, bytes | str]:
        try:
            return True, await iterator.__anext__()
        except StopAsyncIteration:
            return False, b""

    while True:
        more, chunk = asyncio.run_coroutine_threadsafe(step(), loop).result()
        if not more:
            return
        yield chunk


def _bridge_exit_code(exit_code: AsyncExitCode, loop: asyncio.AbstractEventLoop) -> ExitCode:
    if callable(exit_code) and inspect.iscoroutinefunction(exit_code):
        async_code = exit_code

        def blocking() -> int | None:
            coro: Any = async_code()
            result: int | None = asyncio.run_coroutine_threadsafe(coro, loop).result()
            return result

        return blocking
    return exit_code  # type: ignore[return-value]


class AsyncSpiller:
    """:class:`~s3spill.spill.spiller.Spiller` for asyncio: the same calls, awaited.

    Construct it with the same arguments as a ``Spiller`` or around an existing one
    (``AsyncSpiller.wrap(spiller)``); one instance per session, shared by every
    concurrent tool call of that session.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.spiller = Spiller(*args, **kwargs)

    @classmethod
    def wrap(cls, spiller: Spiller) -> AsyncSpiller:
        self = cls.__new__(cls)
        self.spiller = spiller
        return self

    @property
    def policy(self) -> Any:
        return self.spiller.policy

    @property
    def session_id(self) -> str:
        return self.spiller.session_id

    async def externalize(self, output: AsyncOutput, tool: str, call_id: str | None = None,
                          exit_code: AsyncExitCode = None, spillable: bool = True, *,
                          label: str | None = None, force: bool = False) -> SpillResult:
        """:meth:`Spiller.externalize` on a worker thread; never raises for store failures."""
        loop = asyncio.get_running_loop()
        source: Output = _bridge_stream(output, loop) if isinstance(output, AsyncIterable) else output
        code = _bridge_exit_code(exit_code, loop)
        return await asyncio.to_thread(self.spiller.externalize, source, tool, call_id, code, spillable,
                                       label=label, force=force)

    async def enforce_turn_budget(self, results: Sequence[TurnResult], per_result: int = 100_000,
                                  turn_total: int = 200_000,
                                  context_window: int | None = None, *,
                                  history_chars: int = 0) -> TurnBudgetReport:
        return await asyncio.to_thread(functools.partial(
            self.spiller.enforce_turn_budget, results, per_result, turn_total, context_window,
            history_chars=history_chars))

    async def externalize_blocks(self, blocks: Sequence[Block], tool: str, call_id: str | None = None,
                                 exit_code: int | None = None) -> BlocksResult:
        return await asyncio.to_thread(self.spiller.externalize_blocks, blocks, tool, call_id, exit_code)

    async def aclose(self, timeout: float | None = None) -> None:
        """Wait (bounded, off the loop) for follow-up work of accepted uploads."""
        await asyncio.to_thread(self.spiller.close, timeout)

    async def __aenter__(self) -> AsyncSpiller:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def aexternalize(spiller: Spiller, output: AsyncOutput, tool: str, call_id: str | None = None,
                       exit_code: AsyncExitCode = None, **kwargs: Any) -> SpillResult:
    """One async externalize with an existing blocking :class:`Spiller`."""
    return await AsyncSpiller.wrap(spiller).externalize(output, tool, call_id, exit_code, **kwargs)
