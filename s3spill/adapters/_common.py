"""What every adapter shares: the session's async Spiller and tools, and how a result is spilled.

Why one helper: each framework hands its after-tool hook a differently shaped result (a
string, a list of content blocks, a dict such as ``{"stdout": …}``), and the rule is the
same for all of them — every string in the result goes through the Spiller (a small one
comes back unchanged and unstored), the shape is kept so the framework still accepts it,
and the retrieval tools' own results are never spilled again (a page is already bounded
by the policy and is a view of a stored artifact).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from s3spill.agent.aio import AsyncAgentTools
from s3spill.agent.tools import AgentTools
from s3spill.context.policy import SpillPolicy
from s3spill.log import get_logger
from s3spill.spill.aio import AsyncSpiller
from s3spill.spill.spiller import Spiller
from s3spill.store.base import ObjectStore
from s3spill.usage.recorder import usage_recorder

log = get_logger("s3spill.adapters")


@dataclass
class Session:
    """One agent session's spiller and retrieval tools, sharing one policy.

    The policy's ``read_tool``/``grep_tool`` are the names the framework shows the model,
    so the pointer the spiller writes names tools the model really has.
    """

    spiller: AsyncSpiller
    tools: AsyncAgentTools

    @classmethod
    def open(cls, store: ObjectStore, session_id: str, policy: SpillPolicy | None = None,
             **spiller_options: Any) -> Session:
        policy = policy or SpillPolicy()
        if "usage" not in spiller_options:  # an agent framework's process is long-lived: batches
            spiller_options["usage"] = usage_recorder(store)
        spiller = Spiller(store, session_id, policy, **spiller_options)
        tools = AgentTools(store, session_id, policy=policy, usage=spiller_options["usage"])
        return cls(AsyncSpiller.wrap(spiller), AsyncAgentTools.wrap(tools))

    @property
    def own_tools(self) -> frozenset[str]:
        return frozenset({self.tools.read_name, self.tools.grep_name, self.tools.tools.list_name})

    def spill_sync(self, value: Any, tool: str, call_id: str | None = None,
                   exit_code: int | None = None) -> Any:
        """``value`` with every string in it passed through the Spiller, shape kept.

        The retrieval tools' own results come back untouched. Never raises for store
        failures (the Spiller degrades honestly); a value of another type is returned as is.
        """
        if tool in self.own_tools or not self._over(value, tool):
            return value
        return _spill_leaves(self.spiller.spiller, value, tool, call_id, exit_code)

    async def spill(self, value: Any, tool: str, call_id: str | None = None,
                    exit_code: int | None = None) -> Any:
        """:meth:`spill_sync` for the event loop: a thread hop only when something is spilled."""
        if tool in self.own_tools or not self._over(value, tool):
            return value
        return await asyncio.to_thread(_spill_leaves, self.spiller.spiller, value, tool, call_id, exit_code)

    def _over(self, value: Any, tool: str) -> bool:
        """Does any string in ``value`` need the Spiller (over a threshold or a budget)?"""
        policy = self.spiller.policy
        if isinstance(value, str):
            return bool(policy.should_externalize(value, tool))
        if isinstance(value, Mapping):
            return any(self._over(item, tool) for item in value.values())
        if isinstance(value, list | tuple):
            return any(self._over(item, tool) for item in value)
        return False

    async def aclose(self) -> None:
        await self.spiller.aclose()


def _spill_leaves(spiller: Spiller, value: Any, tool: str, call_id: str | None,
                  exit_code: int | None) -> Any:
    if isinstance(value, str):
        if not spiller.policy.should_externalize(value, tool):
            return value
        result = spiller.externalize(value, tool, call_id, exit_code)
        log.info("adapters.spilled", tool=tool, bytes=result.total_bytes, spilled=result.spilled,
                 degraded=result.degraded_reason is not None)
        return result.context_text
    if isinstance(value, Mapping):
        return {key: _spill_leaves(spiller, item, tool, call_id, exit_code) for key, item in value.items()}
    if isinstance(value, list | tuple):
        items = [_spill_leaves(spiller, item, tool, call_id, exit_code) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value
