"""``s3spill mcp-proxy``: put the Spiller in front of any MCP server, without changing it.

:mod:`~s3spill.proxy.settings` (thresholds, the never-spill list, the tool prefix),
:mod:`~s3spill.proxy.results` (one ``tools/call`` result through the Spiller, in MCP's own
shape), :mod:`~s3spill.proxy.relay` (the JSON-RPC relay that applies it) and
:mod:`~s3spill.proxy.stdio` (the processes and pipes around it),
:mod:`~s3spill.proxy.http_upstream` (an upstream over streamable HTTP) and
:mod:`~s3spill.proxy.http_server` (the proxy served over streamable HTTP, sessions by token).
"""
