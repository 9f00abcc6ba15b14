"""What the proxy changes in ``tools/list`` pages and in the handshake's capabilities.

Why a clash is an error on *every* page: a client gathers all pages into one tool table,
so an upstream tool named like one of ours on page 1 would shadow ours (or be shadowed)
as surely as on the last page; the pointers name our tools, so the listing is refused
with an error saying which names clash and how to rename ours.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from s3spill.log import get_logger
from s3spill.proxy.wire import INTERNAL_ERROR, METHOD_NOT_FOUND

log = get_logger("s3spill.proxy")

#: One upstream tool as the client should see it (its outputSchema rewritten, say).
ToolRewrite = Callable[[dict[str, Any]], dict[str, Any]]


def listed_page(msg: dict[str, Any], own_names: Collection[str], own_specs: list[dict[str, Any]],
                rewrite: ToolRewrite | None = None) -> dict[str, Any]:
    """The ``tools/list`` response to hand on (``msg`` itself when nothing changes)."""
    error = msg.get("error")
    if isinstance(error, dict) and error.get("code") == METHOD_NOT_FOUND:
        return {"jsonrpc": "2.0", "id": msg.get("id"), "result": {"tools": own_specs}}
    result = msg.get("result")
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        return msg
    tools: list[Any] = result["tools"]
    names = {t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)}
    clash: list[str] = sorted(names & set(own_names))
    if clash:
        text = (f"s3spill mcp-proxy: the upstream server has tool(s) named {', '.join(clash)}, "
                f"which are the proxy's own; start the proxy with another --tool-prefix")
        log.error("proxy.tool_name_clash", tools=clash)
        return {"jsonrpc": "2.0", "id": msg.get("id"), "error": {"code": INTERNAL_ERROR, "message": text}}
    if rewrite is not None:
        tools = [rewrite(t) if isinstance(t, dict) else t for t in tools]
    if not result.get("nextCursor"):
        tools = [*tools, *own_specs]  # ours go on the last page
    if tools == result["tools"]:
        return msg
    return {**msg, "result": {**result, "tools": tools}}
