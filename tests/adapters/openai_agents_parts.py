"""The OpenAI Agents SDK pieces of tests/adapters/test_openai_agents.py: its tools and the hooks
that script the model. Apart from the tests so that collecting them does not import the SDK
(~1.6 s of CPU in each of the suite's workers, most of which never run them)."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, RunConfig, RunHooks, Runner, function_tool
from agents.items import ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call

from tests.adapters import build_scenario as scenario


@function_tool
def build() -> str:
    """Run the build and return its log."""
    return scenario.BUILD_LOG


@function_tool
def small() -> str:
    """A short answer."""
    return "ok\n"


def outputs(result: Any) -> dict[str, str]:
    """Each tool call's output, by call id."""
    return {item.raw_item["call_id"]: str(item.output) for item in result.new_items
            if isinstance(item, ToolCallOutputItem)}


def run(agent: Agent[Any], prompt: str) -> Any:
    """One Runner run, tracing off."""
    return asyncio.run(Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=True)))


class FollowPointer(RunHooks[Any]):
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
