#![doc = include_str!("../README.md")]

mod event;
mod message;
mod model;
pub mod providers;

pub use event::AgentEvent;
pub use message::{
    AssistantContent, AssistantMessage, CustomMessage, Message, StopReason, ToolCallBlock,
    ToolResultMessage, UserMessage, now_ms,
};
pub use model::{AssistantEvent, Context, Model, StreamOptions, ThinkingLevel, ToolChoice};

mod agent;
mod agent_loop;
mod config;
mod scripted;

pub use agent::{Agent, AgentError, Listener, ListenerId, Prompt, QueueMode};
pub use agent_loop::{AgentContext, AgentLoopError, AgentStream, agent_loop, agent_loop_continue};
pub use config::{
    AfterToolCall, AfterToolCallContext, AfterToolCallHook, AgentLoopConfig, ApiKeyHook,
    BeforeToolCall, BeforeToolCallContext, BeforeToolCallHook, DEFAULT_ABORT_GRACE,
    DEFAULT_MAX_NESTING_DEPTH, DEFAULT_MAX_RESULT_BYTES, MessageSource, MessagesHook,
    ShouldStopHook, ToolExecution, TurnEndContext,
};
pub use event::ToolCallRef;
pub use scripted::{FnModel, ModelRequest, SCRIPT_EXHAUSTED, ScriptedModel, ScriptedStreaming};
