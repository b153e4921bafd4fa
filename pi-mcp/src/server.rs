//! The MCP server: a `ToolRegistry` served over stdio and streamable HTTP.
