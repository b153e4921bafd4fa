"""A stdio MCP server written with the official Python SDK (PyPI `mcp`, `MCPServer`) whose tools
ask the user during the call (elicitation) and answer with what the client sent back: the
terminal interface's tests (tests/tui.rs) answer its questions on the screen.

Usage: python asking_server.py
"""

import json
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)

mcp = MCPServer(name="asker")


class Profile(BaseModel):
    name: str = Field(title="Name", description="what to call you")
    age: int = Field(default=36, title="Age")
    pets: int = Field(title="Pets", description="how many pets you have")
    plan: Literal["free", "team"] = Field(title="Plan")


def ask_profile() -> Elicit[Profile]:
    # An OSC sequence (set the terminal's title) that the client must not pass on.
    return Elicit("Who are you?\x1b]0;pwned\x07", Profile)


@mcp.tool()
def profile(
    answer: Annotated[ElicitationResult[Profile], Resolve(ask_profile)],
) -> str:
    """Asks who the user is (a form: an input_required result on 2026-07-28, an
    elicitation/create request before), then says what came back."""
    if isinstance(answer, AcceptedElicitation):
        return "accepted " + json.dumps(answer.data.model_dump(), sort_keys=True)
    return f"answered {answer.action}"


if __name__ == "__main__":
    mcp.run()
