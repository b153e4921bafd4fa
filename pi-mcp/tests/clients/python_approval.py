"""The MCP Python SDK's client (`from mcp import Client`, PyPI `mcp` 2.3.0) calling a pi-mcp tool
that needs approval. Usage: python_approval.py URL MODE ANSWER, with the bearer token in
$PI_MCP_TOKEN; MODE `auto` (2026-07-28: the server answers `input_required`, the SDK fills in
the form and retries) or `legacy` (2025-11-25: the server sends `elicitation/create`); ANSWER
`yes`, `no` (the form answered approve: false), `decline`, or `none` (no elicitation callback:
the client does not declare the capability). Prints one JSON line: the result and the forms the
callback saw.
"""

import asyncio
import json
import os
import sys

import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client


async def main(url, mode, answer):
    asked = []

    async def on_elicitation(context, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        if answer == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"approve": answer == "yes"})

    callback = None if answer == "none" else on_elicitation
    headers = {"Authorization": f"Bearer {os.environ['PI_MCP_TOKEN']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode,
                          elicitation_callback=callback) as client:
            result = await client.call_tool("refund", {"order": "A-7", "cents": "250"})
            text = "\n".join(block.text for block in result.content if block.type == "text")
            print(json.dumps({"protocol": client.protocol_version, "is_error": bool(result.is_error),
                              "text": text, "asked": asked}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
