//! The MCP client: an MCP server's tools as `AgentTool`s.
