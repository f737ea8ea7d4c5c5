"""MCP over stdio, read line by line in linear time, with a cap on a message's size.

MCP's stdio transport sends one JSON-RPC message per line. The SDK's client joins each piece it
reads to the line so far and splits the whole again: a tool answering 1, 5, 20 MB took 0.5, 3.5,
45 s here, and the call timed out. `stdio_lines` reads with asyncio's `readuntil`, which looks at
each byte once (0.5, 0.4, 2.0 s), and refuses a line longer than `limit` bytes: the call it
answers fails with a message that says so, and the session goes on.

Closing it (or cancelling the task that holds it, as `MCPClient` does with a server that never
answers `initialize`) ends the server process: stdin closed, 2 s to exit, then killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

LIMIT = 64 * 2**20  # bytes in one message from a server (a text answer is in it twice: text, structured)
EXIT_SECONDS = 2.0  # what a server gets to exit once its stdin is closed, before it is killed
ID = re.compile(rb'"id"\s*:\s*(\d+|"[^"\\]{0,200}")')  # a message's id, near its start


@contextlib.asynccontextmanager
async def stdio_lines(params: StdioServerParameters, limit: int = LIMIT) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server `params` says and yield (read stream, write stream) as the SDK's
    `stdio_client` does; its stderr goes nowhere."""
    process = await asyncio.create_subprocess_exec(
        params.command, *params.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=get_default_environment() | (params.env or {}),
        cwd=params.cwd, limit=limit, start_new_session=True)
    incoming, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write, outgoing = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with incoming:
            while True:
                try:
                    line = await process.stdout.readuntil(b"\n")
                except asyncio.IncompleteReadError:  # the server closed its stdout (it ended)
                    return
                except asyncio.LimitOverrunError:
                    line = await _skip_line(process.stdout, limit)
                    await incoming.send(_refusal(line, too_large(limit)))
                    continue
                with contextlib.suppress(ValueError):  # a line that is not JSON-RPC is ignored
                    await incoming.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(line)))

    async def writer() -> None:
        async with outgoing:
            async for message in outgoing:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                process.stdin.write(data.encode() + b"\n")
                await process.stdin.drain()

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            tasks.start_soon(writer)
            try:
                yield read, write
            finally:
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)


def too_large(limit: int) -> str:
    """What a call fails with when its answer is over `limit` bytes (over HTTP too: mcp_http)."""
    return f"the answer is over the {limit / 2**20:g} MB limit on one message (limit=)"


async def _skip_line(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Read past the rest of a line too long to keep; returns its first `limit` bytes or so."""
    head = await stream.read(limit)
    while True:
        try:
            await stream.readuntil(b"\n")
            return head
        except asyncio.LimitOverrunError as e:
            await stream.readexactly(e.consumed)
        except asyncio.IncompleteReadError:
            return head


def _refusal(line: bytes, message: str) -> SessionMessage | Exception:
    """An error answer to the request the refused line answered (its id is near its start)."""
    found = ID.search(line[:400])
    if found is None:
        return ValueError(message)
    error = types.JSONRPCError(jsonrpc="2.0", id=json.loads(found.group(1)),
                               error=types.ErrorData(code=-32000, message=message))
    return SessionMessage(error)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Close the server's stdin; kill it if it has not ended within EXIT_SECONDS."""
    with contextlib.suppress(OSError):
        process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), EXIT_SECONDS)
    except (TimeoutError, asyncio.TimeoutError):
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
