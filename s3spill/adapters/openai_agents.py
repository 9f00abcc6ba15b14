"""OpenAI Agents SDK: the retrieval tools as ``FunctionTool`` objects, and spilling tools.

:func:`artifact_tools` gives ``read_artifact``/``grep_artifact``/``list_artifacts`` as
:class:`agents.FunctionTool` objects with s3spill's own JSON schemas (not strict: the
paging arguments are optional). :func:`spilling` is the after-tool hook: it returns copies
of the agent's function tools whose output passes through the Spiller before the SDK
turns it into the model's tool result — the SDK's run hooks (``on_tool_end``) see an
output but cannot replace it, so the hook sits on the tool's own invoker::

    s3 = S3SpillTools(store, session_id)
    agent = Agent(name="dev", tools=[*s3.spilling([bash, fetch]), *s3.tools])

A refusal of a retrieval tool comes back as the one-line error string (the SDK's own
convention for a model-visible tool error), never an exception in the run. Outputs that
are not strings (a list, a dict, a ``ToolOutputText``) are spilled string by string,
shape kept; other objects are passed through unchanged.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from agents import FunctionTool, Tool
from agents.tool_context import ToolContext

from s3spill.adapters._common import Session
from s3spill.context.policy import SpillPolicy
from s3spill.store.base import ObjectStore

__all__ = ["S3SpillTools", "artifact_tools", "spilling"]


def artifact_tools(session: Session) -> list[FunctionTool]:
    """``read_artifact``, ``grep_artifact`` and ``list_artifacts`` as Agents SDK function tools,
    bound to ``session``."""
    return [FunctionTool(name=spec["name"], description=spec["description"],
                         params_json_schema=spec["input_schema"],
                         on_invoke_tool=_invoker(session, spec["name"]), strict_json_schema=False)
            for spec in session.tools.specs("anthropic")]


def _invoker(session: Session, name: str) -> Any:
    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        try:
            parsed = json.loads(arguments or "{}")
        except ValueError:
            return "InvalidRequest: the arguments are not valid JSON"
        if not isinstance(parsed, dict):
            return "InvalidRequest: the arguments must be a JSON object"
        outcome = await session.tools.call(name, parsed)
        return outcome.text

    return invoke


def spilling(session: Session, tools: Iterable[Tool]) -> list[Tool]:
    """Copies of ``tools`` whose function tools' outputs pass through the Spiller.

    Tools of other kinds (hosted, computer, MCP) are returned as they are: their output
    does not pass through a Python invoker here.
    """
    out: list[Tool] = []
    for tool in tools:
        if not isinstance(tool, FunctionTool) or tool.name in session.own_tools:
            out.append(tool)
            continue
        wrapped = copy.copy(tool)
        inner = tool.on_invoke_tool
        name = tool.name

        async def invoke(ctx: ToolContext[Any], arguments: str, _inner: Any = inner,
                         _name: str = name) -> Any:
            result = await _inner(ctx, arguments)
            return await session.spill(result, _name, getattr(ctx, "tool_call_id", None))

        wrapped.on_invoke_tool = invoke
        out.append(wrapped)
    return out


class S3SpillTools:
    """One session's retrieval tools and spilling hook for the Agents SDK."""

    def __init__(self, store: ObjectStore | None = None, session_id: str | None = None,
                 policy: SpillPolicy | None = None, *, session: Session | None = None,
                 **spiller_options: Any) -> None:
        if session is None:
            if store is None or not session_id:
                raise ValueError("S3SpillTools needs a store and the harness's session id (or a session)")
            session = Session.open(store, session_id, policy, **spiller_options)
        self.session = session
        self.tools: list[FunctionTool] = artifact_tools(session)

    def spilling(self, tools: Iterable[Tool]) -> list[Tool]:
        return spilling(self.session, tools)
