"""Our artifacts beside the upstream's resources: what the proxy adds to ``resources/*``.

``resources/read`` of an ``s3spill://`` URI is answered by the proxy (never forwarded: the
upstream cannot answer for our artifacts, as it cannot for our tools); every other URI is
the upstream's. ``resources/list`` and ``resources/templates/list`` go to the upstream, and
our session's artifacts and our one template are added to its last page — or are the
whole answer when the upstream has no resources (``Method not found``). Resources of the
upstream pass through unchanged.
"""

from __future__ import annotations

from typing import Any

from s3spill.agent.resources import TEMPLATE, ArtifactResources, is_ours
from s3spill.agent.tools import AgentTools
from s3spill.proxy.wire import METHOD_NOT_FOUND

#: The list methods we add to, and the key of the list in each one's result.
LISTS = {"resources/list": "resources", "resources/templates/list": "resourceTemplates"}


class ProxyResources:
    """What the relay needs to serve our artifacts as resources (the calls block: run them on a thread)."""

    def __init__(self, tools: AgentTools) -> None:
        self.artifacts = ArtifactResources(tools)

    @staticmethod
    def answers(method: str, params: dict[str, Any]) -> bool:
        """Is this request ours to answer (a read of one of our URIs)?"""
        return method == "resources/read" and is_ours(params.get("uri"))

    def read(self, params: dict[str, Any]) -> dict[str, Any]:
        return self.artifacts.read(str(params["uri"]))

    def merged(self, method: str, msg: dict[str, Any]) -> dict[str, Any]:
        """The upstream's page of ``method`` (a key of :data:`LISTS`) with ours on the last page."""
        key = LISTS[method]
        error = msg.get("error")
        if isinstance(error, dict) and error.get("code") == METHOD_NOT_FOUND:
            return {"jsonrpc": "2.0", "id": msg.get("id"), "result": {key: self._ours(key)}}
        result = msg.get("result")
        if not isinstance(result, dict) or not isinstance(result.get(key), list) or result.get("nextCursor"):
            return msg
        return {**msg, "result": {**result, key: [*result[key], *self._ours(key)]}}

    def _ours(self, key: str) -> list[dict[str, Any]]:
        return self.artifacts.listing() if key == "resources" else [dict(TEMPLATE)]
