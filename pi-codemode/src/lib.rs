#![doc = include_str!("../README.md")]

mod calls;
mod catalog;
mod cpu;
mod declarations;
mod engine;
mod json;
mod limits;
mod replay;
mod search;
mod session;
mod to_js;
mod tool;

pub use limits::CodeLimits;
pub use tool::{CODE_TOOL_NAME, CodeTool};
