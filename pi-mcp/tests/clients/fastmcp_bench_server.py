"""The benchmark's Python peer: the same tiny `echo` tool on FastMCP (named `MCPServer` since the
MCP Python SDK 2.0; PyPI `mcp` 2.3.0). Usage: fastmcp_bench_server.py stdio | http PORT"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("fastmcp-bench")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


if sys.argv[1] == "stdio":
    server.run("stdio")
else:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
