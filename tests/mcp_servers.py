"""MCP servers that misbehave, for tests/test_interop_mcp.py: `python tests/mcp_servers.py MODE`.

Each is a real MCP server (the official SDK, over stdio) offering one tool, `calculate`, that
misbehaves when called: `dies` (the process exits mid-call), `hangs` (never answers), `malformed`
(an answer that does not match the output schema), `large` (answers as many characters as the
expression says, at once). `mute` never answers the client's initialize at all. `MODE --http PORT`
serves the same over streamable HTTP (0: any free port, printed as the world server prints it),
answering with server-sent events, or with one JSON body each with `--json`."""

import asyncio
import os
import sys
from functools import partial


def main(mode: str, http: int | None = None, json_body: bool = False) -> None:
    if mode == "mute":  # reads what the client sends, never answers, ends when its stdin closes
        sys.stdin.buffer.read()  # (before importing the SDK and the kit: a second of CPU it never uses)
        return
    import mcp_types as types
    from mcp.server.lowlevel.server import Server

    from agentlab.interop.mcp import _mcp_tool, serve, world_tools

    calculate = next(o for o in world_tools() if o.spec.name == "calculate")

    async def tools(ctx, params):
        return types.ListToolsResult(tools=[_mcp_tool(calculate)])

    async def misbehave(ctx, params):
        if mode == "dies":
            os._exit(3)
        if mode == "hangs":  # the call never ends, but the server still stops when its stdin closes
            await asyncio.Event().wait()
        if mode == "large":
            text = "x" * int(params.arguments["expression"])
            answer = [types.TextContent(text=text)]
            return types.CallToolResult(content=answer, structured_content={"result": text})
        return types.CallToolResult(content=[], structured_content={"result": 42})  # malformed

    server = Server(mode, on_list_tools=tools, on_call_tool=misbehave)
    if json_body:  # answer each request with one JSON body, not a stream of server-sent events
        server.streamable_http_app = partial(server.streamable_http_app, json_response=True)
    serve(server, http=http)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[3]) if sys.argv[2:3] == ["--http"] else None, "--json" in sys.argv)
    if sys.argv[1] != "mute":  # the mute one imported nothing to tear down
        from agentlab.interop.mcp import exit_at_once

        exit_at_once()
