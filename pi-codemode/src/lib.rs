#![doc = include_str!("../README.md")]

mod calls;
mod declarations;
mod engine;
mod json;
mod limits;
mod session;
mod tool;

pub use limits::CodeLimits;
pub use tool::{CODE_TOOL_NAME, CodeTool};
