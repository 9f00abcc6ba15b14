"""OpenAI Agents SDK: spilling function tools in a real Runner loop driven by its ScriptedModel."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, RunConfig, RunHooks, Runner, function_tool
from agents.items import ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call

from s3spill.adapters.openai_agents import S3SpillTools
from s3spill.store import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.adapters import build_scenario as scenario


@function_tool
def build() -> str:
    """Run the build and return its log."""
    return scenario.BUILD_LOG


@function_tool
def small() -> str:
    """A short answer."""
    return "ok\n"


def _outputs(result: Any) -> dict[str, str]:
    return {item.raw_item["call_id"]: str(item.output) for item in result.new_items
            if isinstance(item, ToolCallOutputItem)}


def _run(agent: Agent[Any], prompt: str) -> Any:
    return asyncio.run(Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=True)))


class _FollowPointer(RunHooks[Any]):
    """Scripts the model's next turns from the pointer it received, as a model would."""

    def __init__(self, model: ScriptedModel, theirs: str) -> None:
        self.model, self.theirs = model, theirs

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if tool.name != "build":
            return
        sid = scenario.source_id_of(str(result))
        self.model.extend([
            [function_call("grep_artifact", {"source_id": sid, "pattern": "ERROR"}, call_id="c2"),
             function_call("read_artifact", {"source_id": sid, "offset": scenario.ERROR_LINE - 2, "limit": 3},
                           call_id="c3")],
            [function_call("read_artifact", {"source_id": self.theirs}, call_id="c4")],
            [assistant_message("the build fails: undefined reference to frob")],
        ])


def test_a_large_result_becomes_a_pointer_the_model_follows(store: ObjectStore) -> None:
    """The build output is a pointer naming the declared tools; grep and read through them find
    the error; another session's id is a one-line error result and the run goes on."""
    s3 = S3SpillTools(store, scenario.SESSION, journal=None)
    model = ScriptedModel([[function_call("build", {}, call_id="c1")]])
    agent = Agent(name="dev", model=model, tools=[*s3.spilling([build]), *s3.tools])
    result = asyncio.run(Runner.run(agent, "Why does the build fail?", hooks=_FollowPointer(
        model, scenario.foreign_source_id(store)), run_config=RunConfig(tracing_disabled=True)))
    outputs = _outputs(result)

    pointer = outputs["c1"]
    assert model.first_call is not None
    assert [t.name for t in model.first_call.tools] == ["build", "read_artifact", "grep_artifact",
                                                        "list_artifacts"]
    assert scenario.called_tools(pointer) == ["read_artifact", "grep_artifact"]
    assert len(pointer) < 40_000 < len(scenario.BUILD_LOG)
    assert scenario.stored_text(store, scenario.source_id_of(pointer)) == scenario.BUILD_LOG
    assert f"{scenario.ERROR_LINE}:\t[15000] ERROR module_15000.c:7" in outputs["c2"]
    assert f"{scenario.ERROR_LINE}\t[15000] ERROR" in outputs["c3"]
    assert outputs["c4"].startswith("SourceIdError: ") and "\n" not in outputs["c4"]
    assert result.final_output == "the build fails: undefined reference to frob"


def test_small_results_pass_through_and_a_down_store_degrades(local_store: ObjectStore) -> None:
    """A small output is the tool's own; with the store down a large one is the degraded text."""
    down = FaultyStore(local_store)
    down.add(Fault("*", "unavailable", times=1_000))
    s3 = S3SpillTools(down, scenario.SESSION, journal=None)
    model = ScriptedModel([[function_call("small", {}, call_id="a"), function_call("build", {}, call_id="b")],
                           [assistant_message("done")]])
    result = _run(Agent(name="dev", model=model, tools=s3.spilling([small, build])), "go")
    outputs = _outputs(result)
    assert outputs["a"] == "ok\n"
    assert "could NOT be saved" in outputs["b"] and "source_id" not in outputs["b"]
    assert result.final_output == "done"
