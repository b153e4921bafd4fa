#![doc = include_str!("../README.md")]

mod client;
mod server;

pub use server::{McpServer, ServeError};
