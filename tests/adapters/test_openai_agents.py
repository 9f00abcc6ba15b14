"""OpenAI Agents SDK: spilling function tools in a real Runner loop driven by its ScriptedModel.

The SDK is imported by the tests, not at collection (tests/adapters/openai_agents_parts.py)."""

from __future__ import annotations

import asyncio

from s3spill.store import ObjectStore
from s3spill.testing import Fault, FaultyStore
from tests.adapters import build_scenario as scenario


def test_a_large_result_becomes_a_pointer_the_model_follows(store: ObjectStore) -> None:
    """The build output is a pointer naming the declared tools; grep and read through them find
    the error; another session's id is a one-line error result and the run goes on."""
    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, function_call

    from s3spill.adapters.openai_agents import S3SpillTools
    from tests.adapters.openai_agents_parts import FollowPointer, build, outputs

    s3 = S3SpillTools(store, scenario.SESSION, journal=None)
    model = ScriptedModel([[function_call("build", {}, call_id="c1")]])
    agent = Agent(name="dev", model=model, tools=[*s3.spilling([build]), *s3.tools])
    result = asyncio.run(Runner.run(agent, "Why does the build fail?", hooks=FollowPointer(
        model, scenario.foreign_source_id(store)), run_config=RunConfig(tracing_disabled=True)))
    answers = outputs(result)

    pointer = answers["c1"]
    assert model.first_call is not None
    assert [t.name for t in model.first_call.tools] == ["build", "read_artifact", "grep_artifact",
                                                        "list_artifacts"]
    assert scenario.called_tools(pointer) == ["read_artifact", "grep_artifact"]
    assert len(pointer) < 40_000 < len(scenario.BUILD_LOG)
    assert scenario.stored_text(store, scenario.source_id_of(pointer)) == scenario.BUILD_LOG
    assert f"{scenario.ERROR_LINE}:\t[15000] ERROR module_15000.c:7" in answers["c2"]
    assert f"{scenario.ERROR_LINE}\t[15000] ERROR" in answers["c3"]
    assert answers["c4"].startswith("SourceIdError: ") and "\n" not in answers["c4"]
    assert result.final_output == "the build fails: undefined reference to frob"


def test_small_results_pass_through_and_a_down_store_degrades(local_store: ObjectStore) -> None:
    """A small output is the tool's own; with the store down a large one is the degraded text."""
    from agents import Agent
    from agents.testing import ScriptedModel, assistant_message, function_call

    from s3spill.adapters.openai_agents import S3SpillTools
    from tests.adapters.openai_agents_parts import build, outputs, run, small

    down = FaultyStore(local_store)
    down.add(Fault("*", "unavailable", times=1_000))
    s3 = S3SpillTools(down, scenario.SESSION, journal=None)
    model = ScriptedModel([[function_call("small", {}, call_id="a"), function_call("build", {}, call_id="b")],
                           [assistant_message("done")]])
    result = run(Agent(name="dev", model=model, tools=s3.spilling([small, build])), "go")
    answers = outputs(result)
    assert answers["a"] == "ok\n"
    assert "could NOT be saved" in answers["b"] and "source_id" not in answers["b"]
    assert result.final_output == "done"
