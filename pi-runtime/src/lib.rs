#![doc = include_str!("../README.md")]

mod event;
mod message;
mod model;
pub mod providers;

pub use event::AgentEvent;
pub use message::{
    AssistantContent, AssistantMessage, CustomMessage, Message, StopReason, ToolCallBlock, ToolResultMessage,
    UserMessage, now_ms,
};
pub use model::{AssistantEvent, Context, Model, StreamOptions, ThinkingLevel, ToolChoice};
