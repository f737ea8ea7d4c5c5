"""MCP servers that misbehave, for tests/test_interop_mcp.py: `python tests/mcp_servers.py MODE`.

Each is a real MCP server (the official SDK, over stdio) offering one tool, `calculate`, that
misbehaves when called: `dies` (the process exits mid-call), `hangs` (never answers), `malformed`
(an answer that does not match the output schema), `large` (answers as many characters as the
expression says, at once). `mute` never answers the client's initialize at all. `MODE --http PORT`
serves the same over streamable HTTP (0: any free port, printed as the world server prints it):
at /mcp answering with server-sent events, at /json with one JSON body each (one process for both,
as each start costs a CPU-second of imports)."""

import asyncio
import os
import sys
from contextlib import AsyncExitStack, asynccontextmanager


def main(mode: str, http: int | None = None) -> None:
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
    if http is not None:
        server.streamable_http_app = both_bodies(server.streamable_http_app)
    serve(server, http=http)


def both_bodies(streamable_http_app):
    """The SDK's app factory made to serve two apps at once: at /mcp server-sent events, as it does,
    and at /json one JSON body per request; each runs its own session manager."""
    from starlette.applications import Starlette

    def app(**options):
        events = streamable_http_app(**options)
        json = streamable_http_app(**options, json_response=True, streamable_http_path="/json")

        @asynccontextmanager
        async def lifespan(whole):
            async with AsyncExitStack() as stack:
                for part in (events, json):
                    await stack.enter_async_context(part.router.lifespan_context(part))
                yield

        return Starlette(routes=[*events.routes, *json.routes], lifespan=lifespan)

    return app


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[3]) if sys.argv[2:3] == ["--http"] else None)
    if sys.argv[1] != "mute":  # the mute one imported nothing to tear down
        from agentlab.interop.mcp import exit_at_once

        exit_at_once()
