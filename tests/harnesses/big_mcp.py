"""A stdio MCP server with one tool, ``dump``, whose text result is ``$BIG_MCP_BYTES`` long
(split into ``$BIG_MCP_BLOCKS`` text blocks, one by default).

Line-delimited JSON-RPC by hand (no SDK): it must start in milliseconds inside every
harness under test, and its result must be exactly the size the test asks for.
"""

from __future__ import annotations

import json
import os
import sys


def body(size: int) -> str:
    """``size`` characters of numbered rows, the same for the test that checks them."""
    rows = "".join(f"row {i:07d} value={i * 7}\n" for i in range(size // 20 + 1))
    return rows[:size]


def main() -> None:
    size = int(os.environ.get("BIG_MCP_BYTES", "1000000"))
    blocks = int(os.environ.get("BIG_MCP_BLOCKS", "1"))
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "initialize":
            result: dict[str, object] = {"protocolVersion": message["params"]["protocolVersion"],
                                         "capabilities": {"tools": {}},
                                         "serverInfo": {"name": "big", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "dump", "description": "dump rows",
                                 "inputSchema": {"type": "object", "properties": {}}}]}
        elif method == "tools/call":
            text, step = body(size), -(-size // blocks)
            result = {"content": [{"type": "text", "text": text[i:i + step]} for i in range(0, size, step)]}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
