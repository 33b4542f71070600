"""A tool server on the official MCP Python SDK (mcp 2.3.0), streamable HTTP at /mcp.

usage: python_mcp_server.py PORT
Its tools: `mixed` answers two text parts around an image, with structured content; `broken`
fails as a tool (`isError`).
"""

import sys
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ImageContent

server = MCPServer("shapes")

@server.tool()
def mixed(q: str) -> CallToolResult:
    """Text, an image and structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"first {q}"),
                 ImageContent(type="image", data="iVBORw0KGgo=" * 1000, mime_type="image/png"),
                 TextContent(type="text", text="second")],
        structured_content={"rows": [{"deep": [0, 1, None]}] * 1000},
    )

@server.tool()
def broken(q: str) -> str:
    """Fails as a tool."""
    raise ValueError("tool says no")

server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
