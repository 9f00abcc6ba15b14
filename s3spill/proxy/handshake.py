"""The handshake as the client sees it: the upstream's answer with our capabilities added.

Kept apart (it imports nothing of ours): :mod:`~s3spill.proxy.quick_start` answers
``initialize`` with it before the rest of the proxy is imported.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: What the proxy itself serves, added to the upstream's capabilities.
OUR_CAPABILITIES: dict[str, Any] = {"tools": {}, "resources": {}}
#: The first protocol version with ``resource_link`` content.
_LINKS_SINCE = "2025-06-18"


def handshake(answer: dict[str, Any]) -> tuple[dict[str, Any], bool | None]:
    """The answer to ``initialize`` as the client gets it (our capabilities added), and whether
    pointers may carry ``resource_link`` blocks in this session (None: no version said)."""
    result = answer.get("result")
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    links = version >= _LINKS_SINCE if isinstance(version, str) else None
    return with_capabilities(answer, OUR_CAPABILITIES), links


def with_capabilities(msg: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """The handshake's answer with each capability in ``added`` that the upstream lacks."""
    result = msg.get("result")
    caps = result.get("capabilities") if isinstance(result, dict) else None
    if not isinstance(caps, dict):
        return msg
    missing = {key: value for key, value in added.items() if key not in caps}
    if not missing:
        return msg
    assert isinstance(result, dict)
    return {**msg, "result": {**result, "capabilities": {**caps, **missing}}}
