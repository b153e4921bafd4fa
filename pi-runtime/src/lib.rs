#![doc = include_str!("../README.md")]

mod event;
mod message;
mod model;
mod output;
mod output_format;
pub mod providers;
mod request_tools;
mod run_state;
mod store;
mod transcript;
mod wait;

pub use event::AgentEvent;
pub use message::{
    AssistantContent, AssistantMessage, CustomMessage, Message, ProviderBlock, StopReason,
    ToolCallBlock, ToolResultMessage, UserMessage, now_ms,
};
pub use model::{AssistantEvent, Context, Model, StreamOptions, ThinkingLevel, ToolChoice};
pub use output::{
    DEFAULT_OUTPUT_RETRIES, DEFAULT_OUTPUT_TOOL, OutputError, OutputMode, OutputOptions,
    OutputStream, agent_loop_output, agent_loop_resume_output,
};
pub use output_format::OutputFormat;
pub use pi_tool::WaitKind;
pub use request_tools::{RequestTools, ToolSearchMode};
pub use run_state::{RUN_STATE_FORMAT, ResumeError, RunState, RunStateReadError};
#[cfg(feature = "sqlite")]
pub use store::SqliteRunStore;
pub use store::{JsonFileStore, RunClaim, RunStore, StoreError};
pub use transcript::Transcript;
pub use wait::{Decision, NestedCallRecord, NestedWait, WaitingCall};

mod agent;
mod agent_loop;
mod config;
mod scripted;
mod turn_hooks;

pub use agent::{Agent, AgentError, Listener, ListenerId, Prompt, QueueMode};
pub use agent_loop::{
    AgentContext, AgentLoopError, AgentStream, Resume, ResumeRefused, agent_loop,
    agent_loop_continue, agent_loop_resume,
};
pub use config::{
    AfterToolCall, AfterToolCallContext, AfterToolCallHook, AgentLoopConfig, ApiKeyHook,
    ApprovalTimeout, Approver, BeforeToolCall, BeforeToolCallContext, BeforeToolCallHook,
    DEFAULT_ABORT_GRACE, DEFAULT_MAX_NESTING_DEPTH, DEFAULT_MAX_RESULT_BYTES, MessageSource,
    MessagesHook, ShouldStopHook, ToolExecution, TurnEndContext,
};
pub use event::ToolCallRef;
pub use scripted::{FnModel, ModelRequest, SCRIPT_EXHAUSTED, ScriptedModel, ScriptedStreaming};
pub use turn_hooks::{
    FinishTurn, FinishTurnHook, PrepareNextTurnHook, PrepareRequestHook, RequestContext, TurnUpdate,
};
