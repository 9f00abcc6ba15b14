"""Claude Agent SDK: the retrieval tools as an in-process MCP server, the hook as ``PostToolUse``.

The tools are SDK MCP tools (``@tool`` + ``create_sdk_mcp_server``) named ``read_artifact``,
``grep_artifact`` and ``list_artifacts``; Claude Code shows them to the model as
``mcp__<server>__read_artifact`` and ``mcp__<server>__grep_artifact``, so the session's
policy names *those* in every pointer (a pointer naming a tool the model does not have is
the bug this module exists to avoid). ``maxResultSizeChars`` is raised to the policy's
hard cap, so Claude Code never persists a page of ours to a file a second time.

The after-tool hook is a ``PostToolUse`` hook: every string in a tool's response (e.g.
Bash's ``stdout`` and ``stderr``) goes through the Spiller and the response, shape kept,
comes back as ``updatedToolOutput``; an unchanged response returns ``{}`` (no opinion)::

    s3 = S3SpillClaude(store, session_id)
    options = s3.options(allowed_tools=["Bash"])  # ClaudeAgentOptions with server + hook
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookContext,
    HookMatcher,
    SdkMcpTool,
    ToolAnnotations,
    create_sdk_mcp_server,
    tool,
)
from claude_agent_sdk.types import HookInput, HookJSONOutput, McpSdkServerConfig

from s3spill._version import __version__
from s3spill.adapters._common import Session
from s3spill.agent.tools import LIST_TOOL
from s3spill.context.policy import GREP_TOOL, READ_TOOL, SpillPolicy
from s3spill.store.base import ObjectStore

__all__ = ["SERVER_NAME", "S3SpillClaude", "artifact_server", "post_tool_use_hook"]

SERVER_NAME = "s3spill"


def model_tool_name(server: str, tool_name: str) -> str:
    """The name Claude Code gives an SDK MCP tool."""
    return f"mcp__{server}__{tool_name}"


def artifact_server(session: Session, name: str = SERVER_NAME) -> McpSdkServerConfig:
    """An in-process MCP server with ``read_artifact``/``grep_artifact``/``list_artifacts`` bound
    to ``session`` (registered under their bare names; the policy holds the prefixed ones)."""
    tools: list[SdkMcpTool[Any]] = []
    bare = {session.tools.read_name: READ_TOOL, session.tools.grep_name: GREP_TOOL}
    cap = session.spiller.policy.hard_cap_chars
    for spec in session.tools.specs("anthropic"):
        annotations = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False,
                                      maxResultSizeChars=cap)
        register = tool(bare.get(spec["name"], spec["name"]), spec["description"], spec["input_schema"],
                        annotations=annotations)
        tools.append(register(_handler(session, spec["name"])))
    return create_sdk_mcp_server(name, version=__version__, tools=tools)


def _handler(session: Session, name: str) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    async def handle(arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = await session.tools.call(name, arguments)
        result: dict[str, Any] = {"content": [{"type": "text", "text": outcome.text}]}
        if outcome.is_error:
            result["is_error"] = True
        return result

    return handle


def post_tool_use_hook(session: Session, server: str = SERVER_NAME) -> Callable[
        [HookInput, str | None, HookContext], Awaitable[HookJSONOutput]]:
    """The ``PostToolUse`` callback: the response with every string passed through the Spiller
    (except the answers of ``server``'s own tools: they are already within budget)."""
    own = model_tool_name(server, "")

    async def hook(hook_input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if hook_input["hook_event_name"] != "PostToolUse":
            return {}
        response = hook_input["tool_response"]
        tool_name = hook_input["tool_name"]
        if tool_name.startswith(own):
            return {}
        updated = await session.spill(response, tool_name, tool_use_id or hook_input["tool_use_id"])
        if updated is response:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": updated}}

    return hook


class S3SpillClaude:
    """One session's in-process tool server and ``PostToolUse`` hook for the Claude Agent SDK."""

    def __init__(self, store: ObjectStore | None = None, session_id: str | None = None,
                 policy: SpillPolicy | None = None, *, server_name: str = SERVER_NAME,
                 session: Session | None = None, **spiller_options: Any) -> None:
        if session is None:
            if store is None or not session_id:
                raise ValueError("S3SpillClaude needs a store and the harness's session id (or a session)")
            named = (policy or SpillPolicy()).model_copy(update={
                "read_tool": model_tool_name(server_name, READ_TOOL),
                "grep_tool": model_tool_name(server_name, GREP_TOOL)})
            session = Session.open(store, session_id, named, **spiller_options)
        self.session = session
        self.server_name = server_name
        self.server = artifact_server(session, server_name)
        self.hook = post_tool_use_hook(session, server_name)

    @property
    def allowed_tools(self) -> list[str]:
        return [self.session.tools.read_name, self.session.tools.grep_name,
                model_tool_name(self.server_name, LIST_TOOL)]

    def options(self, **kwargs: Any) -> ClaudeAgentOptions:
        """``ClaudeAgentOptions`` with the server, the hook and the tools allowed, plus ``kwargs``."""
        servers = dict(kwargs.pop("mcp_servers", None) or {})
        servers[self.server_name] = self.server
        hooks = dict(kwargs.pop("hooks", None) or {})
        hooks["PostToolUse"] = [*hooks.get("PostToolUse", []), HookMatcher(hooks=[self.hook])]
        allowed = [*kwargs.pop("allowed_tools", []), *self.allowed_tools]
        return ClaudeAgentOptions(mcp_servers=servers, hooks=hooks, allowed_tools=allowed, **kwargs)
