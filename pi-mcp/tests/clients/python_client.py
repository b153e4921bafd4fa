"""The MCP Python SDK's client (`from mcp import Client`, PyPI `mcp` 2.3.0) against pi-mcp's
fixture server. Usage: python_client.py (stdio SERVER_EXE | http URL | unix SOCKET) (auto | legacy)

`auto` probes `server/discover` and speaks 2026-07-28; `legacy` uses the 2025-11-25 handshake.
Over HTTP the client sends `Authorization: Bearer $PI_MCP_TOKEN` through its HTTP client (an
`httpx2.AsyncClient`, as the SDK documents), after checking that the server refuses it without.
"""

import asyncio
import logging
import os
import sys

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

RED_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
EXPECTED_TOOLS = [
    "add", "cancelled_calls", "count_steps", "echo", "explode", "fail",
    "most_overlap", "one_at_a_time", "one_at_a_time_runs", "pixel", "wait_for_cancel",
]


class Warnings(logging.Handler):
    """The transport's warnings: a session's DELETE answered other than 200 or 204 is one."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


TRANSPORT_WARNINGS = Warnings()
logging.getLogger("mcp.client.streamable_http").addHandler(TRANSPORT_WARNINGS)


def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def cancelled_count(client):
    return int(text_of(await client.call_tool("cancelled_calls", {})))


async def main(transport, target, mode):
    if transport == "stdio":
        await run(StdioServerParameters(command=target, args=["stdio"]), transport, mode)
        return
    token = os.environ.get("PI_MCP_TOKEN")
    if token:
        try:
            async with Client(target if transport == "http" else unix_transport(target, None), mode=mode):
                pass
        except Exception as err:  # the SDK's own error for an HTTP 401
            print(f"refused without the token: {type(err).__name__}")
        else:
            raise AssertionError("the server took a client without the token")
    async with http_client(transport, target, token) as http:
        url = "http://localhost/mcp" if transport == "unix" else target
        await run(streamable_http_client(url, http_client=http), transport, mode)
    check(not TRANSPORT_WARNINGS.messages, f"the transport warned: {TRANSPORT_WARNINGS.messages}")


def http_client(transport, target, token):
    """The SDK's HTTP client settings (30 s, 300 s for reads), with the token and the socket."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    socket = {"transport": httpx2.AsyncHTTPTransport(uds=target)} if transport == "unix" else {}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300), **socket)


def unix_transport(socket, token):
    return streamable_http_client("http://localhost/mcp", http_client=http_client("unix", socket, token))


async def run(server, transport, mode):
    async with Client(server, mode=mode) as client:
        expected_version = "2025-11-25" if mode == "legacy" else "2026-07-28"
        check(client.protocol_version == expected_version, f"protocol {client.protocol_version}")

        listed = (await client.list_tools()).tools
        check([t.name for t in listed] == EXPECTED_TOOLS, f"tools/list order: {[t.name for t in listed]}")
        tools = {t.name: t for t in listed}
        check(tools["echo"].title == "Echo", f"title: {tools['echo'].title}")
        hints = tools["echo"].annotations
        check(hints.read_only_hint is True and hints.idempotent_hint is True and hints.open_world_hint is False,
              f"echo annotations: {hints}")
        check(tools["fail"].annotations is None, "fail has no annotations")
        check(tools["add"].output_schema["properties"]["sum"]["type"] == "integer", "add outputSchema")
        check(tools["add"].input_schema["type"] == "object", "inputSchema root is an object")

        result = await client.call_tool("echo", {"text": "hi"})
        check(not result.is_error and text_of(result) == "hi", f"echo: {result}")

        # "3" is normalized to 3, as in the agent loop; the SDK checks structuredContent against outputSchema.
        result = await client.call_tool("add", {"a": 2, "b": "3"})
        check(not result.is_error and result.structured_content == {"sum": 5}, f"add: {result}")
        check(text_of(result) == '{"sum":5}', f"add text copy: {text_of(result)}")

        result = await client.call_tool("add", {"a": "x"})
        check(result.is_error, "invalid arguments are an error result")
        check(text_of(result) == 'Validation failed for tool "add":\n  - b: missing required property\n'
              '  - a: expected integer; got "x"\n\nReceived arguments:\n{\n  "a": "x"\n}', f"invalid: {text_of(result)!r}")

        result = await client.call_tool("fail", {"reason": "disk full"})
        check(result.is_error and text_of(result) == "disk full", f"fail: {result}")

        result = await client.call_tool("explode", {})
        check(result.is_error and text_of(result) == "Tool explode panicked: boom", f"explode: {result}")

        result = await client.call_tool("pixel", {})
        image = result.content[0]
        check(image.type == "image" and image.mime_type == "image/png" and image.data == RED_PIXEL_PNG,
              f"pixel: {result}")

        try:
            await client.call_tool("ech", {})
            raise AssertionError("an unknown tool must be a JSON-RPC error")
        except MCPError as err:
            check(err.code == -32602, f"unknown tool code {err.code}")
            check(err.message == 'Tool ech not found (did you mean "echo"?)', f"unknown tool: {err.message!r}")

        progress = []

        async def on_progress(value, total, message):
            progress.append((value, message))

        result = await client.call_tool("count_steps", {"steps": 3}, progress_callback=on_progress)
        check(text_of(result) == "counted 3 steps", f"count_steps: {result}")
        check([m for _, m in progress] == ["step 1", "step 2", "step 3"], f"progress: {progress}")
        check(all(a < b for (a, _), (b, _) in zip(progress, progress[1:])), f"progress increases: {progress}")

        before = await cancelled_count(client)
        call = asyncio.create_task(client.call_tool("wait_for_cancel", {}))
        await asyncio.sleep(0.5)
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            pass
        for _ in range(100):
            if await cancelled_count(client) == before + 1:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the server never saw the cancellation")
        print(f"ok python {transport} {client.protocol_version}")


# A hung server fails the test instead of hanging it.
asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2], sys.argv[3]), timeout=120))
