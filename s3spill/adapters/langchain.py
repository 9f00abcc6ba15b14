"""LangChain (1.x agents on LangGraph): the retrieval tools and the after-tool hook as middleware.

``S3SpillMiddleware`` is an :class:`langchain.agents.middleware.AgentMiddleware`
(``create_agent(model, tools, middleware=[S3SpillMiddleware(...)])``): its ``tools`` are
``read_artifact``/``grep_artifact``/``list_artifacts`` as :class:`langchain_core.tools.StructuredTool` objects
with s3spill's own JSON schemas, and its ``wrap_tool_call``/``awrap_tool_call`` pass every
other tool's :class:`~langchain_core.messages.ToolMessage` content through the Spiller, so
a large output reaches the model as a preview plus a pointer to those tools. Without
``create_agent``, :func:`artifact_tools` gives the tools alone, and LangGraph's
``ToolNode(tools, wrap_tool_call=middleware.wrap_tool_call)`` takes the same hook.

A refusal of a retrieval tool is a ``ToolMessage`` with ``status="error"`` and the one-line
reason (a :class:`~langchain_core.tools.ToolException` handled by the tool), never an
exception in the agent's run. Content that is a list of blocks is spilled block by block,
string by string, with its shape kept; a ``Command`` is passed through.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from s3spill.adapters._common import Session
from s3spill.context.policy import SpillPolicy
from s3spill.store.base import ObjectStore

__all__ = ["S3SpillMiddleware", "artifact_tools"]

ToolResult = ToolMessage | Command[Any]


def artifact_tools(session: Session) -> list[BaseTool]:
    """``read_artifact``, ``grep_artifact`` and ``list_artifacts`` as LangChain tools, bound to
    ``session``."""
    out: list[BaseTool] = []
    for spec in session.tools.specs("anthropic"):
        func, coroutine = _tool_functions(session, spec["name"])
        out.append(StructuredTool(name=spec["name"], description=spec["description"],
                                  args_schema=spec["input_schema"], func=func, coroutine=coroutine,
                                  handle_tool_error=True))
    return out


def _tool_functions(session: Session, name: str) -> tuple[Callable[..., str], Callable[..., Awaitable[str]]]:
    def func(**arguments: Any) -> str:
        outcome = session.tools.tools.call(name, arguments)
        if outcome.is_error:
            raise ToolException(outcome.text)
        return outcome.text

    async def coroutine(**arguments: Any) -> str:
        outcome = await session.tools.call(name, arguments)
        if outcome.is_error:
            raise ToolException(outcome.text)
        return outcome.text

    return func, coroutine


class S3SpillMiddleware(AgentMiddleware[Any, Any, Any]):
    """The s3spill middleware for one session: tools plus the after-tool spill hook."""

    def __init__(self, store: ObjectStore | None = None, session_id: str | None = None,
                 policy: SpillPolicy | None = None, *, session: Session | None = None,
                 **spiller_options: Any) -> None:
        super().__init__()
        if session is None:
            if store is None or not session_id:
                raise ValueError("S3SpillMiddleware needs a store and the harness's session id "
                                 "(or a session)")
            session = Session.open(store, session_id, policy, **spiller_options)
        self.session = session
        self.tools = artifact_tools(session)

    @property
    def name(self) -> str:
        return "S3SpillMiddleware"

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        result = handler(request)
        if isinstance(result, ToolMessage):
            content = self.session.spill_sync(result.content, _tool_name(request, result),
                                              result.tool_call_id)
            if content is not result.content:
                return result.model_copy(update={"content": content})
        return result

    async def awrap_tool_call(self, request: ToolCallRequest,
                              handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]) -> ToolResult:
        result = await handler(request)
        if isinstance(result, ToolMessage):
            content = await self.session.spill(result.content, _tool_name(request, result),
                                               result.tool_call_id)
            if content is not result.content:
                return result.model_copy(update={"content": content})
        return result


def _tool_name(request: ToolCallRequest, result: ToolMessage) -> str:
    return str(result.name or request.tool_call.get("name") or "tool")
