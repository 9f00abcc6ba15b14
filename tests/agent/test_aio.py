"""The async API: the blocking Spiller and tools on worker threads, the event loop kept free."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

from s3spill import AsyncAgentTools, AsyncSpiller, aexternalize
from s3spill.agent.tools import AgentTools
from s3spill.spill.spiller import Spiller
from s3spill.store import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.adapters.build_scenario import (
    BUILD_LOG,
    ERROR_LINE,
    SESSION,
    foreign_source_id,
    source_id_of,
    stored_text,
)


def test_an_async_stream_and_exit_code_are_spilled_in_one_pass(store: ObjectStore) -> None:
    """An async chunk stream with an async exit-code callable is stored byte for byte, and the
    failed command's preview favours the tail, as with a blocking stream."""
    pulled: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        data = BUILD_LOG.encode()
        for start in range(0, len(data), 64 * 1024):
            pulled.append(start)
            await asyncio.sleep(0)
            yield data[start:start + 64 * 1024]

    async def wait() -> int:
        return 2

    async def run() -> str:
        async with AsyncSpiller(store, SESSION, journal=None) as spiller:
            result = await spiller.externalize(chunks(), "bash", "c1", wait)
        assert result.spilled and result.exit_code == 2 and result.total_bytes == len(BUILD_LOG)
        return result.context_text

    text = asyncio.run(run())
    assert stored_text(store, source_id_of(text)) == BUILD_LOG
    assert len(pulled) == -(-len(BUILD_LOG) // (64 * 1024))
    head = text[:text.index("[… ")]
    # A failed command's preview favours the tail: 3,840 bytes of head (+ a separator).
    assert "exit code 2" in text and len(head) <= 3_840 + 1


def test_an_asyncio_subprocess_is_spilled_from_its_stream_reader(local_store: ObjectStore) -> None:
    """A real asyncio subprocess's stdout (with a 300,000-character line, over the reader's
    line limit) and its proc.wait are taken as they are: stored byte for byte, exit code kept."""
    script = ("import sys; w = sys.stdout.write; w('start\\n'); w('x' * 300_000 + '\\n'); "
              "[w(f'line {i}\\n') for i in range(50_000)]; sys.exit(3)")

    async def run() -> tuple[str, int | None, bytes]:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script,
                                                    stdout=asyncio.subprocess.PIPE)
        assert proc.stdout is not None
        spill = AsyncSpiller(local_store, SESSION, journal=None).externalize(proc.stdout, "bash", "c1",
                                                                             proc.wait)
        try:
            result = await asyncio.wait_for(spill, 60)
        finally:  # a reader that stopped reading would leave the child blocked on a full pipe
            if proc.returncode is None:
                proc.kill()
        return result.context_text, result.exit_code, result.model_dump_json().encode()

    text, exit_code, _ = asyncio.run(run())
    expected = "start\n" + "x" * 300_000 + "\n" + "".join(f"line {i}\n" for i in range(50_000))
    assert exit_code == 3 and stored_text(local_store, source_id_of(text)) == expected


def test_the_event_loop_keeps_running_while_a_spill_blocks_on_the_store(local_store: ObjectStore) -> None:
    """A store that stalls for 0.3 s per write stalls only the worker thread: a ticker on the
    event loop keeps ticking during the spill."""
    slow = FaultyStore(local_store)
    slow.add(Fault("put_if_absent", "delay", times=10, seconds=0.3))
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(asyncio.get_running_loop().time())
            await asyncio.sleep(0.01)

    async def run() -> int:
        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        result = await aexternalize(Spiller(slow, SESSION, journal=None), BUILD_LOG, "bash", "c1", 0)
        seen = len(ticks)
        task.cancel()
        assert result.spilled
        return seen

    assert asyncio.run(run()) >= 20  # >= 0.6 s of stalls, a tick every 10 ms


def test_a_failing_store_degrades_without_raising(local_store: ObjectStore) -> None:
    """When the store is down, the awaited call returns the honest degraded text, never raises."""
    down = FaultyStore(local_store)
    down.add(Fault("*", "unavailable", times=1_000))

    async def run() -> str:
        result = await AsyncSpiller(down, SESSION, journal=None).externalize(BUILD_LOG, "bash", "c1", 1)
        assert not result.spilled and result.degraded_reason
        return result.context_text

    text = asyncio.run(run())
    assert "could NOT be saved" in text and "source_id" not in text


def test_async_tools_answer_as_the_blocking_tools(store: ObjectStore) -> None:
    """Pages, searches and refusals are the blocking tools' own, awaited."""
    with Spiller(store, SESSION, journal=None) as spiller:
        sid = source_id_of(spiller.externalize(BUILD_LOG, "bash", "c1", 0).context_text)
    blocking = AgentTools(store, SESSION)
    tools = AsyncAgentTools.wrap(blocking)
    theirs = foreign_source_id(store)

    async def run() -> tuple[str, str, bool, str]:
        page, grep = await asyncio.gather(tools.read_artifact(sid, offset=ERROR_LINE - 3, limit=5),
                                          tools.grep_artifact(sid, "ERROR"))
        refused = await tools.call(tools.read_name, {"source_id": theirs})
        return page, grep, refused.is_error, refused.text

    page, grep, is_error, text = asyncio.run(run())
    assert page == blocking.read_artifact(sid, offset=ERROR_LINE - 3, limit=5)
    assert grep == blocking.grep_artifact(sid, "ERROR") and f"{ERROR_LINE}:\t" in grep
    assert is_error and text.startswith("SourceIdError: ") and "\n" not in text
