"""An MCP server written with the official Python SDK (PyPI `mcp` 2.3.0, `MCPServer`, the 2.x
name of FastMCP), served over streamable HTTP on 127.0.0.1:<port>/mcp.

Used by pi-mcp's client tests: a server we did not write. Usage: python python_sdk_server.py PORT,
or python python_sdk_server.py stdio for the same tools over stdio.
"""

import os
import sys
from typing import Annotated

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Audio,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

mcp = MCPServer(name="python-fastmcp", instructions="Test tools for pi-mcp.")

CANCELLED: list[str] = []


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True))
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


class Weather(BaseModel):
    city: str
    celsius: float


@mcp.tool()
def weather(city: str) -> Weather:
    """Structured output: the weather in a city."""
    return Weather(city=city, celsius=21.5)


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"failed on purpose: {reason}")


@mcp.tool()
def beep() -> Audio:
    """Returns a short audio clip."""
    return Audio(data=b"RIFF0000WAVE", format="wav")


@mcp.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Reports progress `steps` times, then answers."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
        await anyio.sleep(0.05)
    return f"done after {steps} steps"


class Profile(BaseModel):
    name: str
    age: int = 36


def ask_profile() -> Elicit[Profile]:
    return Elicit("Who is asking?", Profile)


@mcp.tool()
def greet(profile: Annotated[ElicitationResult[Profile], Resolve(ask_profile)]) -> str:
    """Asks the user who they are (an elicitation: an input_required result on 2026-07-28, a
    request to the client before), then greets them."""
    if isinstance(profile, AcceptedElicitation):
        return f"hello {profile.data.name} ({profile.data.age})"
    return f"no greeting: {profile.action}"


@mcp.tool()
async def wait_forever(tag: str, ctx: Context) -> str:
    """Reports progress once, then waits until cancelled (and remembers that it was)."""
    await ctx.report_progress(1, None, "waiting")
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        CANCELLED.append(tag)
        raise
    return "never"


@mcp.tool()
def cancelled_calls() -> str:
    """The tags of the wait_forever calls that were cancelled."""
    return ",".join(CANCELLED)


@mcp.tool()
async def die(ctx: Context) -> str:
    """Reports progress, then kills the server process mid-call."""
    await ctx.report_progress(1, None, "about to exit")
    await anyio.sleep(0.1)
    os._exit(3)


@mcp.tool()
async def add_tool(ctx: Context) -> str:
    """Registers the tool `added_later` and tells clients the list changed."""

    def added_later() -> str:
        """A tool that appeared after the first listing."""
        return "new"

    mcp.add_tool(added_later)
    try:
        await ctx.notify_tools_changed()
    except Exception:  # noqa: BLE001 - legacy sessions have no subscription bus
        pass
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:  # noqa: BLE001 - modern sessions have no standalone stream
        pass
    return "added"


@mcp.tool()
def forget(name: str) -> str:
    """Removes the tool `name` (without telling clients)."""
    mcp.remove_tool(name)
    return "removed"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run()
    else:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
