#![doc = include_str!("../README.md")]

mod client;
mod server;

pub use client::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, McpClient, McpClientBuilder, McpClientError,
    McpConfig, McpConfigError, McpServerConfig, McpTool, McpToolList,
};
pub use server::{McpServer, ServeError};
