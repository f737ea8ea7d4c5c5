"""MCP servers that misbehave, for tests/test_interop_mcp.py: `python tests/mcp_servers.py MODE`.

Each is a real MCP server (the official SDK, over stdio) offering one tool, `calculate`, that
misbehaves when called: `dies` (the process exits mid-call), `hangs` (never answers), `malformed`
(an answer that does not match the output schema)."""

import asyncio
import os
import sys

import mcp_types as types
from mcp.server.lowlevel.server import Server

from agentlab.interop.mcp import _mcp_tool, exit_at_once, serve, world_tools


def main(mode: str) -> None:
    calculate = next(o for o in world_tools() if o.spec.name == "calculate")

    async def tools(ctx, params):
        return types.ListToolsResult(tools=[_mcp_tool(calculate)])

    async def misbehave(ctx, params):
        if mode == "dies":
            os._exit(3)
        if mode == "hangs":  # the call never ends, but the server still stops when its stdin closes
            await asyncio.Event().wait()
        return types.CallToolResult(content=[], structured_content={"result": 42})  # malformed

    serve(Server(mode, on_list_tools=tools, on_call_tool=misbehave))


if __name__ == "__main__":
    main(sys.argv[1])
    exit_at_once()
