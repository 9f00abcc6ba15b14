"""What a model calls: read/grep tools over artifacts, the MCP server, a reference agent loop."""
