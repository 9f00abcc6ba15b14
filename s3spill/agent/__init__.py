"""What a model calls: read/grep tools over artifacts, the async API, the MCP server (``agent.mcp``)."""
