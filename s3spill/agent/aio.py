"""The async retrieval tools: :class:`AgentTools` for an asyncio harness, each call on a thread.

The store layer blocks (boto3, the file system); a page read or a grep runs the tested
blocking path on a worker thread so it never stalls the event loop. The async Spiller
is :mod:`s3spill.spill.aio`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from s3spill.agent.listing import DEFAULT_LIST_LIMIT
from s3spill.agent.tools import DEFAULT_GREP_MATCHES, DEFAULT_PAGE_LINES, AgentTools, ToolOutcome

__all__ = ["AsyncAgentTools"]


class AsyncAgentTools:
    """:class:`~s3spill.agent.tools.AgentTools` for asyncio: each call on a worker thread.

    Results and refusals are exactly the blocking tools' (same budget, same one-line
    errors); ``call`` never raises for a store failure or a bad argument.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.tools = AgentTools(*args, **kwargs)

    @classmethod
    def wrap(cls, tools: AgentTools) -> AsyncAgentTools:
        self = cls.__new__(cls)
        self.tools = tools
        return self

    @property
    def read_name(self) -> str:
        return self.tools.read_name

    @property
    def grep_name(self) -> str:
        return self.tools.grep_name

    async def read_artifact(self, source_id: str, offset: int = 0, limit: int = DEFAULT_PAGE_LINES,
                            char_offset: int = 0, since: int | None = None) -> str:
        return await asyncio.to_thread(self.tools.read_artifact, source_id, offset, limit, char_offset,
                                       since=since)

    async def grep_artifact(self, source_id: str, pattern: str, context: int = 0,
                            max_matches: int = DEFAULT_GREP_MATCHES) -> str:
        return await asyncio.to_thread(self.tools.grep_artifact, source_id, pattern, context, max_matches)

    async def list_artifacts(self, limit: int = DEFAULT_LIST_LIMIT) -> str:
        return await asyncio.to_thread(self.tools.list_artifacts, limit)

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        return await asyncio.to_thread(self.tools.call, name, arguments)

    def specs(self, dialect: Any = "openai") -> list[dict[str, Any]]:
        return self.tools.specs(dialect)
