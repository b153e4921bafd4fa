#![doc = include_str!("../README.md")]

mod client;
mod server;

pub use client::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, McpClient, McpClientBuilder, McpClientError,
    McpConfig, McpConfigError, McpServerConfig, McpTool, McpToolList,
};
pub use server::{
    DEFAULT_MAX_REQUEST_BODY_BYTES, McpServer, ServeError, TokenError, TokenVerifier,
    VerifiedToken, generate_token,
};
