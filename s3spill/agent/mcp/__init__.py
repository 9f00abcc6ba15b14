"""The MCP server: stdio or HTTP for one session, or one HTTP server for many sessions by bearer token."""
