//! The model side of the loop: what a model is given, and the events it streams back.
//!
//! A model never fails by returning `Err`: it ends its stream with [`AssistantEvent::Error`]
//! carrying an assistant message whose `stop_reason` is `Error` or `Aborted`.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use pi_tool::{CancellationToken, ToolSpec};

use crate::message::{AssistantMessage, Message, StopReason, ToolCallBlock};
use crate::output_format::OutputFormat;
use crate::request_tools::{RequestTools, ToolSearchMode};

/// What one model request sees: the system prompt, the transcript and the tools.
///
/// Borrowed, never copied: the loop hands the model its transcript as a slice of shared
/// messages, so a request costs nothing per earlier message.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    /// The system prompt (may be empty).
    pub system_prompt: &'a str,
    /// The conversation so far. Custom messages are skipped by every provider.
    pub messages: &'a [Arc<Message>],
    /// The tools the model may call.
    pub tools: &'a [ToolSpec],
}

/// Whether and which tool the model must call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Tool(String),
    /// The model may call only the named tools (`required`: must call one of them), while the
    /// request still lists every tool, so the tool list, and the prompt cache with it, stays
    /// the same. Sent as OpenAI Responses' `allowed_tools`, and to Gemini (when `required`) as
    /// `allowedFunctionNames`; APIs without a way to narrow the choice get `Auto` or `Required`.
    AllowedTools {
        /// The tools the model may call.
        names: Vec<String>,
        /// Whether it must call one.
        required: bool,
    },
}

/// How hard a reasoning model should think.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ThinkingLevel {
    /// No reasoning (or the provider's minimum).
    #[default]
    Off,
    /// Minimal reasoning.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high (pi's `xhigh`): `reasoning_effort: "xhigh"` on OpenAI's APIs, for the models
    /// that take it; Anthropic and Gemini budgets treat it as `High`.
    XHigh,
}

impl ThinkingLevel {
    /// Every level, lowest first (pi's `EXTENDED_THINKING_LEVELS`).
    pub const ALL: [ThinkingLevel; 6] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::XHigh,
    ];

    /// pi's name for the level: `off`, `minimal`, `low`, `medium`, `high`, `xhigh`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::XHigh => "xhigh",
        }
    }

    /// The level pi names `name`, if any.
    ///
    /// ```
    /// use pi_runtime::ThinkingLevel;
    ///
    /// assert_eq!(ThinkingLevel::parse("xhigh"), Some(ThinkingLevel::XHigh));
    /// assert_eq!(ThinkingLevel::parse("max"), None);
    /// ```
    pub fn parse(name: &str) -> Option<ThinkingLevel> {
        ThinkingLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == name)
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per-request options. Every field is optional; providers ignore what they cannot express.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Aborts the request; the stream then ends with an `Aborted` message.
    pub signal: CancellationToken,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Output token limit.
    pub max_tokens: Option<u32>,
    /// Tool choice.
    pub tool_choice: Option<ToolChoice>,
    /// Reasoning effort.
    pub thinking: Option<ThinkingLevel>,
    /// API key overriding the model's own.
    pub api_key: Option<String>,
    /// A session id for providers that cache by session.
    pub session_id: Option<String>,
    /// Extra HTTP headers.
    pub headers: BTreeMap<String, String>,
    /// How deferred tools are found: the local `tool_search` (the default) or the API's own
    /// search where it has one.
    pub tool_search: ToolSearchMode,
    /// Offer the API's own code runner where it has one (programmatic tool calling: OpenAI
    /// Responses' hosted JavaScript, Anthropic's code execution tool running Python): the model
    /// may then write a program, run by the API, that calls the tools code may call
    /// ([`ToolCallers::Code`](pi_tool::ToolCallers::Code) and `Both`), each call coming back
    /// as a tool call marked with its `caller`. Code-only tools are sent too, for the program
    /// only. Off by default; ignored by APIs without one (see [`Model::native_code_calls`]).
    pub native_code_calls: bool,
    /// Which tools are deferred, and their lowered schemas cached per tool. The agent loop sets
    /// it for each run from the run's tools; set it yourself when calling a provider directly.
    pub tools: RequestTools,
    /// The schema the final answer must match, sent as the API's own structured output (see
    /// [`OutputFormat`]); the model may still call tools before it answers. Set by the typed
    /// runs ([`Agent::prompt_output`](crate::Agent::prompt_output)) when the model has a
    /// [`structured_output`](Model::structured_output); ignored by APIs without one.
    pub output: Option<Arc<OutputFormat>>,
}

impl StreamOptions {
    /// Options with the given abort signal and nothing else set.
    pub fn with_signal(signal: CancellationToken) -> Self {
        StreamOptions {
            signal,
            ..StreamOptions::default()
        }
    }
}

/// One event of a streamed assistant response (pi's `AssistantMessageEvent`, without the
/// partial message copied into every delta: apply events with
/// [`AssistantMessage::apply`](crate::AssistantMessage::apply) to follow along).
///
/// `#[non_exhaustive]`: APIs gain kinds of blocks, and so this gains events; a `match` needs a
/// `_` arm (a listener that does not know an event can skip it).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AssistantEvent {
    /// The response began; `partial` has the metadata (api, provider, model) and no content.
    Start {
        /// The message so far.
        partial: AssistantMessage,
    },
    /// A text block opened at `content_index`.
    TextStart {
        /// Index of the block in `content`.
        content_index: usize,
    },
    /// More text for the block.
    TextDelta {
        /// Index of the block.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The text block is complete.
    TextEnd {
        /// Index of the block.
        content_index: usize,
        /// The whole text of the block.
        content: String,
    },
    /// A thinking block opened.
    ThinkingStart {
        /// Index of the block.
        content_index: usize,
    },
    /// More reasoning text.
    ThinkingDelta {
        /// Index of the block.
        content_index: usize,
        /// The new text.
        delta: String,
    },
    /// The thinking block is complete.
    ThinkingEnd {
        /// Index of the block.
        content_index: usize,
        /// The whole reasoning text.
        content: String,
    },
    /// A tool call began: its id and name are known, its arguments follow as deltas.
    ToolCallStart {
        /// Index of the block.
        content_index: usize,
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// More argument JSON text.
    ToolCallDelta {
        /// Index of the block.
        content_index: usize,
        /// The raw JSON fragment.
        delta: String,
    },
    /// The tool call is complete, with parsed arguments.
    ToolCallEnd {
        /// Index of the block.
        content_index: usize,
        /// The complete call.
        tool_call: ToolCallBlock,
    },
    /// A block the API's server produced (see
    /// [`AssistantContent::Provider`](crate::AssistantContent::Provider)): sent when the
    /// block begins and again, complete, when it ends, at the same index. The last one sent for
    /// an index is the block's final form.
    ProviderBlock {
        /// Index of the block.
        content_index: usize,
        /// The block.
        block: crate::message::ProviderBlock,
    },
    /// The response ended normally (`Stop`, `Length` or `ToolUse`).
    Done {
        /// Why it stopped.
        reason: StopReason,
        /// The complete message.
        message: AssistantMessage,
    },
    /// The response failed (`Error`) or was aborted (`Aborted`).
    Error {
        /// `Error` or `Aborted`.
        reason: StopReason,
        /// The message so far, with `error_message` set.
        error: AssistantMessage,
    },
}

/// A language model the loop can stream from.
///
/// Implemented by the HTTP providers and by `ScriptedModel`.
pub trait Model: Send + Sync {
    /// The wire API (`openai-completions`, `anthropic-messages`, `scripted`, ...).
    fn api(&self) -> &str;
    /// The provider (`openai`, `anthropic`, ...).
    fn provider(&self) -> &str;
    /// The model id.
    fn id(&self) -> &str;

    /// Whether the API has a tool search of its own, used when
    /// [`StreamOptions::tool_search`] asks for it (Anthropic Messages and OpenAI Responses).
    fn native_tool_search(&self) -> bool {
        false
    }

    /// Whether the API runs the model's own code that calls tools, used when
    /// [`StreamOptions::native_code_calls`] asks for it (Anthropic Messages and OpenAI
    /// Responses).
    fn native_code_calls(&self) -> bool {
        false
    }

    /// Whether the API takes a schema for the final answer in the same request as tools (its
    /// structured output, sent from [`StreamOptions::output`]): OpenAI Responses and Chat
    /// Completions, Azure OpenAI, Anthropic Messages (Claude 4.1 and later), Gemini 3 and
    /// Mistral. Where not, a typed run asks for its answer through an output tool.
    fn structured_output(&self) -> bool {
        false
    }

    /// Whether the model reads images; when not, providers replace images with a placeholder.
    fn accepts_images(&self) -> bool {
        true
    }

    /// Streams one response. The stream must end with `Done` or `Error`; it never panics or
    /// fails otherwise.
    fn stream<'a>(
        &'a self,
        context: Context<'a>,
        options: &'a StreamOptions,
    ) -> BoxStream<'a, AssistantEvent>;
}
