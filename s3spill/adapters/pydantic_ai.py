"""Pydantic AI: the retrieval tools and the after-tool hook as one capability.

``S3Spill`` is a Pydantic AI *capability* (``Agent(..., capabilities=[S3Spill(...)])``):
it registers ``read_artifact``/``grep_artifact``/``list_artifacts`` as :class:`pydantic_ai.Tool` objects with
s3spill's own JSON schemas (the same the MCP server and the chat-API specs declare), and
its ``after_tool_execute`` hook passes every other tool's result through the Spiller, so
a large output reaches the model as a preview plus a pointer to those tools.

A refusal of a retrieval tool (a foreign or malformed source id, a tampered artifact,
an unreachable store) is raised as :class:`pydantic_ai.exceptions.ToolFailed`: the model
sees the one line and adapts, and it does not use up the tool's retry budget. A result
that is not a string (a dict, a list, a model) is spilled string by string with its
shape kept; any other object is passed through unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from s3spill.adapters._common import Session
from s3spill.context.policy import SpillPolicy
from s3spill.store.base import ObjectStore

__all__ = ["S3Spill", "artifact_tools"]


def artifact_tools(session: Session) -> list[Tool[Any]]:
    """``read_artifact``, ``grep_artifact`` and ``list_artifacts`` as Pydantic AI tools, bound to
    ``session``."""
    return [Tool.from_schema(_tool_function(session, spec["name"]), name=spec["name"],
                             description=spec["description"], json_schema=spec["input_schema"])
            for spec in session.tools.specs("anthropic")]


def _tool_function(session: Session, name: str) -> Callable[..., Awaitable[str]]:
    async def call(**arguments: Any) -> str:
        outcome = await session.tools.call(name, arguments)
        if outcome.is_error:
            raise ToolFailed(outcome.text)
        return outcome.text

    return call


@dataclass(init=False)
class S3Spill(AbstractCapability[Any]):
    """The s3spill capability for one session: tools plus the after-tool spill hook."""

    session: Session = field(repr=False)

    def __init__(self, store: ObjectStore | None = None, session_id: str | None = None,
                 policy: SpillPolicy | None = None, *, session: Session | None = None,
                 **spiller_options: Any) -> None:
        if session is None:
            if store is None or not session_id:
                raise ValueError("S3Spill needs a store and the harness's session id (or a session)")
            session = Session.open(store, session_id, policy, **spiller_options)
        self.session = session

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a store: not built from a spec

    def get_toolset(self) -> FunctionToolset[Any]:
        return FunctionToolset(artifact_tools(self.session))

    async def after_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart,
                                 tool_def: ToolDefinition, args: Any, result: Any) -> Any:
        return await self.session.spill(result, call.tool_name, call.tool_call_id)
