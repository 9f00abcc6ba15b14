"""LangChain: S3SpillMiddleware in a real create_agent graph driven by GenericFakeChatModel."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from pydantic import Field

from s3spill.adapters.langchain import S3SpillMiddleware
from s3spill.store import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.adapters import build_scenario as scenario


@tool
def build() -> str:
    """Run the build and return its log."""
    return scenario.BUILD_LOG


class ToolCallingFake(GenericFakeChatModel):
    """LangChain's fake chat model; ``bind_tools`` records the declared tools (no provider)."""

    bound: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound.extend(t.name if isinstance(t, BaseTool) else str(t) for t in tools)
        return self


def _script(theirs: str) -> Iterator[AIMessage]:
    """The model's turns; each turn after the first reads the pointer the agent stored."""
    yield AIMessage("", tool_calls=[{"name": "build", "args": {}, "id": "c1"}])
    sid = _SID.pop()
    yield AIMessage("", tool_calls=[
        {"name": "grep_artifact", "args": {"source_id": sid, "pattern": "ERROR"}, "id": "c2"},
        {"name": "read_artifact", "args": {"source_id": sid, "offset": scenario.ERROR_LINE - 2, "limit": 3},
         "id": "c3"}])
    yield AIMessage("", tool_calls=[{"name": "read_artifact", "args": {"source_id": theirs}, "id": "c4"}])
    yield AIMessage("the build fails: undefined reference to frob")


_SID: list[str] = []


class _Capture(S3SpillMiddleware):
    """The middleware, also noting the source id of a pointer for the scripted model's next turn."""

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        result = super().wrap_tool_call(request, handler)
        self._note(result)
        return result

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        result = await super().awrap_tool_call(request, handler)
        self._note(result)
        return result

    @staticmethod
    def _note(result: Any) -> None:
        if isinstance(result, ToolMessage) and result.name == "build" and "source_id=" in str(result.content):
            _SID.append(scenario.source_id_of(str(result.content)))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_large_result_becomes_a_pointer_the_model_follows(store: ObjectStore, mode: str) -> None:
    """Sync and async: the build log's ToolMessage is a pointer naming the middleware's tools;
    grep and read through them find the error; another session's id is an error ToolMessage."""
    theirs = scenario.foreign_source_id(store)
    _SID.clear()
    model = ToolCallingFake(messages=_script(theirs))
    agent = create_agent(model, tools=[build], middleware=[_Capture(store, scenario.SESSION, journal=None)])
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
