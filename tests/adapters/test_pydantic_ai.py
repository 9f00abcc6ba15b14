"""Pydantic AI: the S3Spill capability in a real Agent run driven by FunctionModel (no network).

Pydantic AI is imported by the tests, not at collection (tests/adapters/pydantic_ai_parts.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from s3spill.store import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.adapters import build_scenario as scenario

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo


def test_a_large_result_becomes_a_pointer_the_model_follows(store: ObjectStore) -> None:
    """The build log reaches the model as a pointer naming the tools it was given; grepping and
    reading through them finds the error line; another session's id is a one-line tool failure."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from s3spill.adapters.pydantic_ai import S3Spill
    from tests.adapters.pydantic_ai_parts import build, tool_returns

    theirs = scenario.foreign_source_id(store)
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages)
        if not returns:
            seen["tools"] = [t.name for t in info.function_tools]
            return ModelResponse(parts=[ToolCallPart("build", {}, tool_call_id="c1")])
        if len(returns) == 1:
            seen["pointer"] = pointer = str(returns[0].content)
            sid = seen["sid"] = scenario.source_id_of(pointer)
            return ModelResponse(parts=[
                ToolCallPart("grep_artifact", {"source_id": sid, "pattern": "ERROR"}, tool_call_id="c2"),
                ToolCallPart("read_artifact",
                             {"source_id": sid, "offset": scenario.ERROR_LINE - 2, "limit": 3},
                             tool_call_id="c3")])
        if len(returns) == 3:
            seen["grep"], seen["page"] = str(returns[1].content), str(returns[2].content)
            return ModelResponse(parts=[ToolCallPart("read_artifact", {"source_id": theirs},
                                                     tool_call_id="c4")])
        seen["refused"] = returns[-1]
        return ModelResponse(parts=[TextPart("the build fails: undefined reference to frob")])

    capability = S3Spill(store, scenario.SESSION, journal=None)
    agent = Agent(FunctionModel(model), tools=[build], capabilities=[capability])
    result = agent.run_sync("Why does the build fail?")

    assert result.output.startswith("the build fails")
    pointer = seen["pointer"]
    assert len(pointer) < 40_000 < len(scenario.BUILD_LOG)
    assert scenario.called_tools(pointer) == ["read_artifact", "grep_artifact"]
    assert set(scenario.called_tools(pointer)) <= set(seen["tools"])
    assert scenario.stored_text(store, seen["sid"]) == scenario.BUILD_LOG
    assert f"{scenario.ERROR_LINE}:\t[15000] ERROR module_15000.c:7" in seen["grep"]
    assert f"{scenario.ERROR_LINE}\t[15000] ERROR" in seen["page"]
    refused = seen["refused"]
    assert refused.outcome == "failed"
    assert str(refused.content).startswith("SourceIdError: ") and "does not belong" in str(refused.content)


def test_small_results_and_other_types_pass_through_untouched(local_store: ObjectStore) -> None:
    """A small string and a non-string result reach the model exactly as the tool returned them,
    and nothing is stored."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from s3spill.adapters.pydantic_ai import S3Spill
    from tests.adapters.pydantic_ai_parts import tool_returns

    def small() -> str:
        """A short answer."""
        return "ok\n"

    def data() -> dict[str, int]:
        """Structured data."""
        return {"passed": 3}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not tool_returns(messages):
            return ModelResponse(parts=[ToolCallPart("small", {}, tool_call_id="a"),
                                        ToolCallPart("data", {}, tool_call_id="b")])
        return ModelResponse(parts=[TextPart("done")])

    spill = S3Spill(local_store, scenario.SESSION, journal=None)
    agent = Agent(FunctionModel(model), tools=[small, data], capabilities=[spill])
    result = agent.run_sync("go")
    contents = {p.tool_name: p.content for p in tool_returns(result.all_messages())}
    assert contents == {"small": "ok\n", "data": {"passed": 3}}
    assert list(local_store.list("")) == []


def test_a_down_store_degrades_the_result_and_the_run_goes_on(local_store: ObjectStore) -> None:
    """With the store unavailable the model gets the honest degraded text and the run completes."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from s3spill.adapters.pydantic_ai import S3Spill
    from tests.adapters.pydantic_ai_parts import build, tool_returns

    down = FaultyStore(local_store)
    down.add(Fault("*", "unavailable", times=1_000))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not tool_returns(messages):
            return ModelResponse(parts=[ToolCallPart("build", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart(str(tool_returns(messages)[0].content))])

    spill = S3Spill(down, scenario.SESSION, journal=None)
    agent = Agent(FunctionModel(model), tools=[build], capabilities=[spill])
    text = agent.run_sync("go").output
    assert "could NOT be saved" in text and "source_id" not in text and len(text) <= 100_000
