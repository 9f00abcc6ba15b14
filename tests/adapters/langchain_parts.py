"""The LangChain pieces of tests/adapters/test_langchain.py: its tool, the fake chat model, the
scripted turns and the middleware that notes a pointer. Apart from the tests so that collecting
them does not import LangChain (~1.9 s of CPU in each of the suite's workers, most of which never
run them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from pydantic import Field

from s3spill.adapters.langchain import S3SpillMiddleware
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


def script(theirs: str) -> Iterator[AIMessage]:
    """The model's turns; each turn after the first reads the pointer the agent stored."""
    yield AIMessage("", tool_calls=[{"name": "build", "args": {}, "id": "c1"}])
    sid = SID.pop()
    yield AIMessage("", tool_calls=[
        {"name": "grep_artifact", "args": {"source_id": sid, "pattern": "ERROR"}, "id": "c2"},
        {"name": "read_artifact", "args": {"source_id": sid, "offset": scenario.ERROR_LINE - 2, "limit": 3},
         "id": "c3"}])
    yield AIMessage("", tool_calls=[{"name": "read_artifact", "args": {"source_id": theirs}, "id": "c4"}])
    yield AIMessage("the build fails: undefined reference to frob")


SID: list[str] = []


class Capture(S3SpillMiddleware):
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
            SID.append(scenario.source_id_of(str(result.content)))
