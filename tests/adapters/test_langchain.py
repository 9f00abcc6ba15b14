"""LangChain: S3SpillMiddleware in a real create_agent graph driven by GenericFakeChatModel.

LangChain is imported by the tests, not at collection (tests/adapters/langchain_parts.py)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from s3spill.store import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.adapters import build_scenario as scenario

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_large_result_becomes_a_pointer_the_model_follows(store: ObjectStore, mode: str) -> None:
    """Sync and async: the build log's ToolMessage is a pointer naming the middleware's tools;
    grep and read through them find the error; another session's id is an error ToolMessage."""
    from langchain.agents import create_agent
    from langchain_core.messages import ToolMessage

    from tests.adapters.langchain_parts import SID, Capture, ToolCallingFake, build, script

    theirs = scenario.foreign_source_id(store)
    SID.clear()
    model = ToolCallingFake(messages=script(theirs))
    agent = create_agent(model, tools=[build], middleware=[Capture(store, scenario.SESSION, journal=None)])
    state = {"messages": [("user", "Why does the build fail?")]}
    out = agent.invoke(state) if mode == "invoke" else asyncio.run(agent.ainvoke(state))
    messages: list[BaseMessage] = out["messages"]
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}

    pointer = str(results["c1"].content)
    assert len(pointer) < 40_000 < len(scenario.BUILD_LOG) and results["c1"].status == "success"
    assert scenario.called_tools(pointer) == ["read_artifact", "grep_artifact"]
    assert {"build", "read_artifact", "grep_artifact"} <= set(model.bound)
    assert scenario.stored_text(store, scenario.source_id_of(pointer)) == scenario.BUILD_LOG
    assert f"{scenario.ERROR_LINE}:\t[15000] ERROR module_15000.c:7" in str(results["c2"].content)
    assert f"{scenario.ERROR_LINE}\t[15000] ERROR" in str(results["c3"].content)
    refused = results["c4"]
    assert refused.status == "error" and str(refused.content).startswith("SourceIdError: ")
    assert "\n" not in str(refused.content)
    assert messages[-1].content == "the build fails: undefined reference to frob"


def test_small_results_pass_through_and_a_down_store_degrades(local_store: ObjectStore) -> None:
    """A small result is the tool's own message; with the store down a large one becomes the
    degraded text (no locator) and the run still completes."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool

    from s3spill.adapters.langchain import S3SpillMiddleware
    from tests.adapters.langchain_parts import ToolCallingFake, build

    down = FaultyStore(local_store)
    down.add(Fault("*", "unavailable", times=1_000))

    @tool
    def small() -> str:
        """A short answer."""
        return "ok\n"

    model = ToolCallingFake(messages=iter([
        AIMessage("", tool_calls=[{"name": "small", "args": {}, "id": "a"},
                                  {"name": "build", "args": {}, "id": "b"}]),
        AIMessage("done")]))
    agent = create_agent(model, tools=[small, build], middleware=[S3SpillMiddleware(down, scenario.SESSION,
                                                                                   journal=None)])
    out = agent.invoke({"messages": [("user", "go")]})
    results = {m.tool_call_id: str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results["a"] == "ok\n"
    assert "could NOT be saved" in results["b"] and "source_id" not in results["b"]
    assert out["messages"][-1].content == "done"
