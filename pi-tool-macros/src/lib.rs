#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod approval;
mod ast;
mod attr;
mod ctxt;
mod docs;
mod examples;
mod expand;
mod keywords;
mod limits;
mod methods;
mod policies;
mod property;
mod valid;

use proc_macro::TokenStream;

/// Turns a fn (usually `async`) into a tool an LLM agent can call.
///
/// ```
/// use pi_tool::{tool, ToolContext, ToolRegistry};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// #[serde(rename_all = "lowercase")]
/// enum Unit { Celsius, Fahrenheit }
///
/// /// Get the current weather for a city.
/// #[tool(label = "Weather")]
/// async fn get_weather(
///     /// City name, e.g. "Paris"
///     city: String,
///     /// Temperature unit (default: celsius)
///     unit: Option<Unit>,
///     ctx: ToolContext,
/// ) -> Result<String, std::io::Error> {
///     let _ = (unit, ctx.tool_call_id());
///     Ok(format!("Sunny in {city}"))
/// }
///
/// let tools = ToolRegistry::new().with(GetWeatherTool);
/// let spec = tools.get("get_weather").unwrap().spec().clone();
/// assert_eq!(spec.description, "Get the current weather for a city.");
/// assert_eq!(spec.parameters["required"], serde_json::json!(["city"]));
/// ```
///
/// # Arguments of the attribute
///
/// | key | meaning | default |
/// |---|---|---|
/// | `name = "..."` | the name the model calls; `^[a-zA-Z0-9_-]{1,64}$`, checked at compile time | the fn's name |
/// | `label = "..."` | a display name for a UI | the name |
/// | `description = "..."` | what the model reads to decide when to call the tool | the fn's doc comment up to its first heading, without code blocks (one of the two is required) |
/// | `sequential` | any batch calling this tool runs one call at a time | the loop's setting |
/// | `parallel` | the tool may run alongside the rest of its batch | the loop's setting |
/// | `deny_unknown_fields` | an argument the schema does not name is an error (`additionalProperties: false`), reported with "did you mean" | unknown arguments are ignored |
/// | `timeout = "30s"` | how long one call may run (`500ms`, `30s`, `5m`, `1h`); on expiry the agent loop cancels the call's token and answers `Tool <name> timed out after 30s`; a sync `fn` needs `blocking` with it (a compile error otherwise) | the loop's `tool_timeout` (none) |
/// | `blocking` | the fn blocks its thread (CPU work, blocking I/O): the agent loop runs each call on tokio's blocking pool, so other calls and events go on | runs on the loop's task |
/// | `defer` | the tool is deferred: its schema is sent to the model only once it is loaded (by the `tool_search` tool, or by a call that names it); it is validated and runs like any other | sent with every request |
/// | `example = r#"{"city": "Paris"}"#` | example arguments (a JSON object; give the key once per example), sent as Anthropic's `input_examples`; checked to be a JSON object at compile time and against the tool's own schema when `ToolRegistry::discover` registers it (an error), and never sent when they fail | none |
/// | `keywords = ["ticket", "bug report"]` | words the built-in tool search finds the tool by besides its name, description and parameters (`AgentTool::keywords`); never sent to the model; each a non-blank word or short phrase (at most 60 characters), no repeats, at most 32, checked at compile time | none |
/// | `eager_input_streaming` | the API may stream the arguments without buffering them (Anthropic's `eager_input_streaming`) | buffered |
/// | `callers = "code"` | who may call the tool: `"model"` (only the model, directly), `"code"` (only from code: another tool's `ctx.call_tool`, a `code` tool's script; the model never sees it) or `"both"` | `"both"` |
/// | `replay = "never"` | what a durable host (`pi-restate`) does with a call interrupted before its outcome was recorded: `"never"` answers that its outcome is unknown instead of running it again; `"safe"` runs it again | run again (at least once) |
/// | `aborted = "Command aborted"` | the error text of a call aborted before it runs, or that does not answer an abort within the grace (`AgentTool::aborted_message`); the agent loop's own checks before a call starts keep `Operation aborted`, as pi's loop does | `Operation aborted` |
/// | `approval` | every call waits for a decision before it runs: the agent loop pauses the run (or asks its approver) until the call is approved or denied | runs at once |
/// | `approval = path` | a `fn(&XxxParams, &ToolContext) -> bool` (or `fn(&Value, &ToolContext) -> bool`) says per call whether it waits, given the arguments as they would run | runs at once |
/// | `prepare_arguments = path` | a `fn(Value) -> Result<Value, E>` that rewrites raw arguments before validation | none |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | hints for hosts (MCP `annotations`), never sent to a model provider; `key = false` says the opposite | not said |
///
/// # What it generates
///
/// For `async fn get_weather`: the fn itself, unchanged and callable; `GetWeatherParams`, a
/// struct with one pub field per model argument, deriving `Deserialize` and `JsonSchema`; and
/// `GetWeatherTool`, a unit struct implementing `AgentTool`, submitted to the registry that
/// `ToolRegistry::discover` reads. Both structs take the fn's visibility.
///
/// A sync `fn` is accepted together with `blocking` (it runs on the blocking pool, where it
/// may block as it likes); without `blocking` it runs inline and may not have a `timeout`.
///
/// # Description
///
/// The model reads the fn's doc comment up to its first Markdown heading, with fenced code
/// blocks left out: rustdoc's sections (`# Errors`, `# Panics`, `# Safety`, `# Examples`) and
/// doctests stay for the people reading the docs. Docs built by a macro (`#[doc =
/// include_str!(..)]`) are taken whole.
///
/// # Parameters
///
/// - `///` docs on a parameter become its `description` in the schema; `#[serde(..)]` and
///   `#[schemars(..)]` move onto the generated field (`#[schemars(range(min = 1, max = 7))]`,
///   `#[serde(default)]`, `#[serde(rename = "ignoreCase")]`).
/// - `Option<T>` parameters are not required (written as `Option<..>`; any other type is read
///   through `pi_tool::__private::deserialize_parameter`, so a type alias of an `Option` must be
///   given). A parameter type that is not `Deserialize` gets one error on it saying what to derive.
/// - A `ToolContext` parameter receives the call's context; a `State<T>` parameter receives
///   shared state. Neither appears in the schema. Under another name (`use pi_tool::ToolContext
///   as Ctx`, a type alias) mark the parameter `#[inject]`; the value is then chosen by type.
/// - The fn may be `async` or a plain `fn`. The clippy lints the macro itself sets off are
///   allowed on it: `too_many_arguments`, `needless_pass_by_value` (arguments are owned,
///   `State<T>` is by value), `unused_async`, and `must_use_candidate` on a plain `fn`.
///
/// # Return types
///
/// `String`, `&'static str`, `Content`, `Vec<Content>`, `ToolResult<D: Serialize>`,
/// `Json<T: Serialize + JsonSchema>`, `JsonWithoutSchema<T: Serialize>`, or `Result<` one of
/// these `, E: Display>`; an `Err` becomes an error result whose text is the error's `Display`.
/// A fn returning `Json<T>` (or `Result<Json<T>, E>`) declares `T`'s schema as its
/// `AgentTool::output_schema`; a `T` without `JsonSchema` is a compile error that says what to
/// derive, and `JsonWithoutSchema<T>` returns the same JSON with no output schema.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::tool(args.into(), input.into()).into()
}

/// Turns the `#[tool]` methods of an inherent `impl` block into tools that share `&self`.
///
/// ```
/// use std::sync::Arc;
/// use pi_tool::{tool, tools, ToolRegistry};
///
/// struct Counter { hits: std::sync::atomic::AtomicU64 }
///
/// #[tools]
/// impl Counter {
///     /// Count one hit and return the total.
///     #[tool]
///     fn hit(&self, by: u64) -> String {
///         let before = self.hits.fetch_add(by, std::sync::atomic::Ordering::Relaxed);
///         (before + by).to_string()
///     }
/// }
///
/// let counter = Arc::new(Counter { hits: 0.into() });
/// let registry: ToolRegistry = counter.tools().into_iter().collect();
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["hit"]);
/// ```
///
/// Each `#[tool]` method (taking `&self`) gets a params struct and a tool type named after the
/// type and the method (`CounterHitParams`, `CounterHitTool`, holding an `Arc<Counter>`), and
/// `Counter::tools(self: &Arc<Self>) -> Vec<Arc<dyn AgentTool>>` returns one tool per method,
/// all bound to the same value. The keys of `#[tool(..)]` are the same as on a free fn. Methods
/// are not registered for `ToolRegistry::discover` (there is no value to bind them to at link
/// time): register what `tools()` returns. One `#[tools]` impl per type (each defines `tools`;
/// a second one is a compile error naming the trait `OneToolsImplPerType`).
#[proc_macro_attribute]
pub fn tools(args: TokenStream, input: TokenStream) -> TokenStream {
    methods::tools(args.into(), input.into()).into()
}
