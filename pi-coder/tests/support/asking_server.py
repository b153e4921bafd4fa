"""A stdio MCP server written with the official Python SDK (PyPI `mcp`, `MCPServer`) whose tools
ask the user during the call (elicitation) and answer with what the client sent back: the
terminal interface's tests (tests/tui.rs) answer its questions on the screen.

Usage: python asking_server.py
"""

import json
import os
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel, Field

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.types import ElicitRequest, ElicitRequestURLParams, InputRequiredResult

mcp = MCPServer(name="asker")


class Profile(BaseModel):
    name: str = Field(title="Name", description="what to call you")
    age: int = Field(default=36, title="Age")
    pets: int = Field(title="Pets", description="how many pets you have")
    plan: Literal["free", "team"] = Field(title="Plan")


async def ask_profile(wait_for: str = "") -> Elicit[Profile]:
    # The test asks for the question when it is ready (after typing a draft), by making the
    # file `wait_for`.
    for _ in range(1200):
        if not wait_for or os.path.exists(wait_for):
            break
        await anyio.sleep(0.05)
    # An OSC sequence (set the terminal's title) that the client must not pass on.
    return Elicit("Who are you?\x1b]0;pwned\x07", Profile)


@mcp.tool()
def profile(
    answer: Annotated[ElicitationResult[Profile], Resolve(ask_profile)],
    wait_for: str = "",
) -> str:
    """Asks who the user is (a form: an input_required result on 2026-07-28, an
    elicitation/create request before), then says what came back."""
    if isinstance(answer, AcceptedElicitation):
        return "accepted " + json.dumps(answer.data.model_dump(), sort_keys=True)
    return f"answered {answer.action}"


@mcp.tool()
def visit(ctx: Context) -> str | InputRequiredResult:
    """Asks the user to open a page (a URL elicitation, as an input_required result), then says
    what came back."""
    answer = (ctx.input_responses or {}).get("pay")
    if answer is not None:
        return f"answered {answer.action}"
    return InputRequiredResult(
        input_requests={
            "pay": ElicitRequest(
                params=ElicitRequestURLParams(
                    message="Confirm the payment",
                    url="https://pay.example/confirm?id=7",
                )
            )
        },
        request_state="pay",
    )


if __name__ == "__main__":
    mcp.run()
