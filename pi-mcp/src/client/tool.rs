//! One MCP server tool as an `AgentTool`: the loop validates its arguments against the server's
//! schema, and a call becomes a `tools/call` request with progress, cancellation and a timeout.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use pi_tool::{
    AgentTool, ArgumentValidator, BoxFuture, Content, ToolAnnotations, ToolContext, ToolError,
    ToolResult, ToolSpec,
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientRequest, InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject,
    ProgressNotificationParam, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::connection::Connection;
use super::content::to_tool_result;
use super::transport::Failure;

/// Rounds of `input_required` answers one call may go through (rmcp's and the other SDKs'
/// default), so a server cannot keep a call alive forever.
const MAX_INPUT_ROUNDS: usize = 10;

/// A tool of an MCP server, imported as an [`AgentTool`].
///
/// Models see the server's `inputSchema` made provider-neutral ([`pi_tool::provider_neutral`]:
/// no `$schema`, `$ref`s inlined) as [`spec`](AgentTool::spec)`.parameters`; the loop validates
/// and normalizes a model's arguments against it, and before anything is sent they are checked
/// once more against the schema exactly as the server sent it
/// ([`input_schema`](Self::input_schema), with its `$schema`, `$defs` and `$anchor`s), so the
/// model gets our error texts and the server only arguments its own schema accepts. The tool keeps its
/// connection alive: it works as long as it is registered somewhere, even after the
/// [`McpClient`](crate::McpClient) is dropped.
pub struct McpTool {
    spec: ToolSpec,
    label: String,
    mcp_name: String,
    input_schema: Value,
    annotations: ToolAnnotations,
    output_schema: Option<Value>,
    /// The model's schema: normalizes (`"3"` to 3) and checks first, in the loop.
    validator: ArgumentValidator,
    /// The server's schema: the last check before anything is sent.
    declared: ArgumentValidator,
    connection: Arc<Connection>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("mcp_name", &self.mcp_name)
            .field("annotations", &self.annotations)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// Builds the tool from the server's description; `None` when its `inputSchema` is not an
    /// object schema (the spec requires `type: "object"`; providers reject anything else).
    pub(crate) fn from_mcp(
        tool: rmcp::model::Tool,
        name: String,
        connection: Arc<Connection>,
    ) -> Result<Self, String> {
        let raw = object_root(&tool.input_schema)?;
        let parameters = pi_tool::provider_neutral(Value::Object(raw.clone()));
        let spec = ToolSpec {
            name,
            description: tool
                .description
                .as_deref()
                .or(tool.title.as_deref())
                .unwrap_or_default()
                .to_owned(),
            parameters,
        };
        let hints = tool.annotations.as_ref();
        let annotations = ToolAnnotations {
            read_only: hints.and_then(|hints| hints.read_only_hint),
            destructive: hints.and_then(|hints| hints.destructive_hint),
            idempotent: hints.and_then(|hints| hints.idempotent_hint),
            open_world: hints.and_then(|hints| hints.open_world_hint),
        };
        let label = tool
            .title
            .clone()
            .or_else(|| hints.and_then(|hints| hints.title.clone()))
            .unwrap_or_else(|| tool.name.to_string());
        let declared = raw_validator(&spec.name, raw);
        Ok(McpTool {
            validator: ArgumentValidator::new(&spec),
            declared,
            spec,
            label,
            input_schema: Value::Object((*tool.input_schema).clone()),
            mcp_name: tool.name.into_owned(),
            annotations,
            output_schema: tool
                .output_schema
                .map(|schema| Value::Object((*schema).clone())),
            connection,
        })
    }

    /// The tool's name on its server (the model sees [`spec`](AgentTool::spec)`.name`, which may
    /// carry a prefix or be shortened).
    pub fn mcp_name(&self) -> &str {
        &self.mcp_name
    }

    /// The server's `inputSchema` exactly as it sent it (JSON Schema 2020-12 unless its
    /// `$schema` says otherwise); arguments are validated against it (with a root `type:
    /// "object"` added when it has none).
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }
}

impl AgentTool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn label(&self) -> &str {
        &self.label
    }

    /// The server's behaviour hints (`None` where it said nothing); hosts that re-serve the
    /// tool pass them on.
    fn annotations(&self) -> ToolAnnotations {
        self.annotations
    }

    /// Whether the client was built with `defer_tools`.
    fn deferred(&self) -> bool {
        self.connection.defer_tools()
    }

    /// The server's `outputSchema`, when it declared one.
    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    fn rewrites_arguments(&self) -> bool {
        false
    }

    /// The server's tools never ask for approval themselves (a host's rule, such as
    /// `ToolRegistry::require_approval`, still can), so hosts skip the question.
    fn may_need_approval(&self) -> bool {
        false
    }

    fn validator(&self) -> Option<&ArgumentValidator> {
        Some(&self.validator)
    }

    fn execute(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        // The loop checked (and normalized) the arguments against our rewrite of the schema;
        // what the server declared decides (its `$anchor`s, its dialect's keywords).
        let args = match self.declared.validate_borrowed(&args) {
            Ok(None) => args,
            Ok(Some(normalized)) => normalized,
            Err(err) => return Box::pin(std::future::ready(Err(err))),
        };
        let connection = Arc::clone(&self.connection);
        let mcp_name = self.mcp_name.clone();
        Box::pin(async move { call(&connection, mcp_name, args, ctx).await })
    }
}

/// A validator of what the server declared (its `$defs`, `$anchor`s and dialect), not of our
/// rewrite of it for models.
fn raw_validator(name: &str, raw: JsonObject) -> ArgumentValidator {
    ArgumentValidator::new(&ToolSpec {
        name: name.to_owned(),
        description: String::new(),
        parameters: Value::Object(raw),
    })
}

/// The server's `inputSchema` with a root `type: "object"` (added when missing; any other root
/// type is refused).
fn object_root(schema: &JsonObject) -> Result<JsonObject, String> {
    let mut schema = schema.clone();
    match schema.get("type") {
        None => {
            schema.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => {
            return Err(format!(
                "its inputSchema has type {other}, but a tool's input must be an object"
            ));
        }
    }
    Ok(schema)
}

/// One `tools/call`, through as many `input_required` rounds (2026-07-28 multi round-trip
/// requests) as the server asks for, each answered by the application's elicitation handler.
async fn call(
    connection: &Connection,
    mcp_name: String,
    args: Value,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    let arguments: JsonObject = match args {
        Value::Object(arguments) => arguments,
        Value::Null => JsonObject::new(),
        other => {
            return Err(ToolError::new(format!(
                "arguments must be a JSON object, got {other}"
            )));
        }
    };
    let server = connection.label();
    let mut params = CallToolRequestParams::new(mcp_name.clone()).with_arguments(arguments);
    let mut state_only_rounds = 0u32;
    for _ in 0..MAX_INPUT_ROUNDS {
        let input = match round(connection, &mcp_name, params.clone(), &ctx).await? {
            Round::Finished(result) => return Ok(result),
            Round::InputRequired(input) => input,
        };
        let requests = input.input_requests.unwrap_or_default();
        if requests.is_empty() {
            if input.request_state.is_none() {
                return Err(ToolError::new(format!(
                    "{server}: tool {mcp_name} asked for input but named none (an input_required result with neither inputRequests nor requestState)"
                )));
            }
            // Only state to carry: back off a little, as rmcp does, before asking again.
            let millis = (50u64 << state_only_rounds.min(3)).min(250);
            state_only_rounds += 1;
            tokio::time::sleep(Duration::from_millis(millis)).await;
        } else {
            state_only_rounds = 0;
        }
        // The user may take a while; an abort meanwhile ends the call at once.
        let responses = tokio::select! {
            responses = answer_input_requests(connection, &mcp_name, requests) => responses?,
            () = ctx.signal().cancelled() => return Err(ToolError::new("Operation aborted")),
        };
        params.input_responses = (!responses.is_empty()).then_some(responses);
        // Echoed exactly as it came; never looked into.
        params.request_state = input.request_state;
    }
    Err(ToolError::new(format!(
        "{server}: tool {mcp_name} still asked for input after {MAX_INPUT_ROUNDS} rounds; the call was abandoned"
    )))
}

/// How one round of a call ended.
enum Round {
    /// A result (or an error result: timeout).
    Finished(ToolResult),
    /// The server needs input before it can answer.
    InputRequired(InputRequiredResult),
}

/// The wait for the user to end, once the call's deadline passed (`None`: not armed).
type Extension<'a> = Option<Pin<Box<dyn Future<Output = Option<Instant>> + Send + 'a>>>;

async fn extension_ended(extension: &mut Extension<'_>) -> Option<Instant> {
    match extension {
        Some(extension) => extension.await,
        None => std::future::pending().await,
    }
}

/// One `tools/call` request: progress -> `ctx.update`, our abort -> `notifications/cancelled`,
/// no answer (and no progress) within the connection's call timeout -> cancelled and an error
/// result (time spent waiting for the user, signing in or answering a question, not counted).
async fn round(
    connection: &Connection,
    mcp_name: &str,
    params: CallToolRequestParams,
    ctx: &ToolContext,
) -> Result<Round, ToolError> {
    let server = connection.label();
    let peer = connection.peer();
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|err| ToolError::new(failure_text(connection, mcp_name, &err)))?;
    let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
    let _route = connection
        .progress_routes()
        .register(handle.progress_token.clone(), progress_tx);
    let request_id = handle.id.clone();
    let response = handle.await_response();
    tokio::pin!(response);
    let timeout = connection.call_timeout();
    let mut due = Instant::now() + timeout;
    let deadline = tokio::time::sleep_until(due);
    tokio::pin!(deadline);
    let mut extension: Extension<'_> = None;
    let signal = ctx.signal().clone();
    loop {
        tokio::select! {
            biased;
            response = &mut response => {
                // rmcp hands each notification to its own task, so progress sent just before
                // the result may still be on its way: let those tasks run, then pass it on.
                tokio::task::yield_now().await;
                while let Ok(progress) = progress_rx.try_recv() {
                    ctx.update(progress_update(&progress));
                }
                return match response {
                    Ok(ServerResult::CallToolResult(result)) => Ok(Round::Finished(to_tool_result(result))),
                    Ok(ServerResult::EmptyResult(_)) => Ok(Round::Finished(ToolResult::new(Vec::new(), Value::Null))),
                    Ok(ServerResult::InputRequiredResult(input)) => Ok(Round::InputRequired(input)),
                    Ok(_) => Err(ToolError::new(format!(
                        "{server}: tool {mcp_name} answered with something other than a tool result"
                    ))),
                    Err(err) => Err(ToolError::new(failure_text(connection, mcp_name, &err))),
                };
            }
            () = signal.cancelled() => {
                send_cancel(peer.clone(), request_id, "the agent aborted the call");
                return Err(ToolError::new("Operation aborted"));
            }
            Some(progress) = progress_rx.recv() => {
                ctx.update(progress_update(&progress));
                due = Instant::now() + timeout;
                deadline.as_mut().reset(due);
                extension = None;
            }
            () = &mut deadline, if extension.is_none() => {
                extension = Some(Box::pin(connection.waits().extended(due, timeout)));
            }
            later = extension_ended(&mut extension) => match later {
                Some(later) => {
                    due = later;
                    deadline.as_mut().reset(due);
                    extension = None;
                }
                None => {
                    send_cancel(peer.clone(), request_id, "timed out");
                    return Ok(Round::Finished(ToolResult::error(format!(
                        "{server}: tool {mcp_name} sent neither a result nor progress for {}; the call was cancelled",
                        human_duration(timeout)
                    ))));
                }
            },
        }
    }
}

/// The answers to an `input_required` result's requests, one at a time (each may be a question
/// to the user): elicitations through the application's handler (declined without one), roots
/// as none; a model completion (sampling) cannot be given.
async fn answer_input_requests(
    connection: &Connection,
    mcp_name: &str,
    requests: InputRequests,
) -> Result<InputResponses, ToolError> {
    let server = connection.label();
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let response = match request {
            InputRequest::Elicitation(request) => {
                let answer = connection.elicitation().answer(request.params).await;
                serde_json::to_value(answer).unwrap_or(Value::Null)
            }
            InputRequest::ListRoots(_) => json!({"roots": []}),
            InputRequest::CreateMessage(_) => {
                return Err(ToolError::new(format!(
                    "{server}: tool {mcp_name} asked the client for a model completion (sampling), which this client does not provide"
                )));
            }
            _ => {
                return Err(ToolError::new(format!(
                    "{server}: tool {mcp_name} asked the client for input of a kind this client does not know"
                )));
            }
        };
        responses.insert(key, response);
    }
    Ok(responses)
}

/// What the model reads when the request itself failed (not a tool error: those are results).
fn failure_text(connection: &Connection, mcp_name: &str, err: &ServiceError) -> String {
    let server = connection.label();
    if let Some(failure) = connection.http_failure() {
        let refused = match failure {
            Failure::Unauthorized { challenge } => Some(format!(
                "the server requires authorization (HTTP 401, WWW-Authenticate: {challenge})"
            )),
            Failure::InsufficientScope { challenge } => Some(format!(
                "the token lacks a scope the server needs (HTTP 403, WWW-Authenticate: {challenge})"
            )),
            Failure::SignIn { reason, .. } => Some(format!("signing in failed: {reason}")),
            Failure::Transport { .. } => None,
        };
        if let Some(refused) = refused {
            return format!("{server}: calling tool {mcp_name} failed: {refused}");
        }
    }
    match err {
        ServiceError::McpError(error) => format!(
            "{server}: calling tool {mcp_name} failed: {} (MCP error {})",
            error.message, error.code.0
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => format!(
            "{server}: the connection to the MCP server was lost during the call to {mcp_name} ({err})"
        ),
        other => format!("{server}: calling tool {mcp_name} failed: {other}"),
    }
}

/// `notifications/cancelled` for the request, sent in the background so the tool returns at
/// once even when the transport is stuck (rmcp turns it into closing the stream on HTTP
/// connections that need that).
fn send_cancel(peer: Peer<RoleClient>, request_id: RequestId, reason: &str) {
    let notification = CancelledNotification::new(CancelledNotificationParam::new(
        Some(request_id),
        Some(reason.to_owned()),
    ));
    tokio::spawn(async move {
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            peer.send_notification(notification.into()),
        )
        .await;
    });
}

/// A progress notification as a partial result: its message (or `progress/total`) as text, the
/// numbers in `details`.
fn progress_update(progress: &ProgressNotificationParam) -> ToolResult {
    let text = match (&progress.message, progress.total) {
        (Some(message), _) => message.clone(),
        (None, Some(total)) => format!("{}/{}", number(progress.progress), number(total)),
        (None, None) => number(progress.progress),
    };
    ToolResult::new(
        vec![Content::text(text)],
        json!({
            "progress": progress.progress,
            "total": progress.total,
            "message": progress.message,
        }),
    )
}

/// `3` for 3.0, `2.5` for 2.5.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        value.to_string()
    }
}

fn human_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis.is_multiple_of(1000) {
        format!("{} s", millis / 1000)
    } else {
        format!("{millis} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            _ => unreachable!("the tests pass objects"),
        }
    }

    #[test]
    fn input_schemas_keep_their_shape_with_an_object_root() {
        let input_schema = |schema: &JsonObject| {
            object_root(schema).map(|raw| pi_tool::provider_neutral(Value::Object(raw)))
        };
        let schema = input_schema(&object(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"a": {"type": "number", "title": "A"}},
            "required": ["a"]
        })))
        .unwrap();
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"a": {"type": "number", "title": "A"}}, "required": ["a"]})
        );
        // provider_neutral also gives an empty object schema its (empty) `properties`.
        assert_eq!(
            input_schema(&object(json!({}))).unwrap(),
            json!({"type": "object", "properties": {}})
        );
        let refused = input_schema(&object(json!({"type": "string"}))).unwrap_err();
        assert_eq!(
            refused,
            "its inputSchema has type \"string\", but a tool's input must be an object"
        );
    }

    #[test]
    fn arguments_are_checked_against_the_schema_the_server_sent() {
        // A 2020-12 schema whose rule sits behind an `$anchor` reference, and a draft-07 one
        // with `definitions`: both keep their meaning.
        let anchored = object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"count": {"$anchor": "count", "type": "integer", "minimum": 1}},
            "properties": {"n": {"$ref": "#count"}},
            "required": ["n"],
            "additionalProperties": false
        }));
        let validator = raw_validator("anchored", object_root(&anchored).unwrap());
        assert_eq!(
            validator.validate(json!({"n": 2})).unwrap(),
            json!({"n": 2})
        );
        let too_small = validator.validate(json!({"n": 0})).unwrap_err().to_string();
        assert!(too_small.contains("n: "), "{too_small}");
        assert!(validator.validate(json!({"n": 2, "extra": 1})).is_err());

        let draft7 = object(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"name": {"type": "string", "minLength": 2}},
            "properties": {"who": {"$ref": "#/definitions/name"}},
            "required": ["who"]
        }));
        let validator = raw_validator("draft7", object_root(&draft7).unwrap());
        assert!(validator.validate(json!({"who": "Ada"})).is_ok());
        assert!(validator.validate(json!({"who": "A"})).is_err());
        assert!(validator.validate(json!({})).is_err());
    }

    #[test]
    fn progress_reads_as_its_message_or_its_numbers() {
        let token = rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1));
        let plain = ProgressNotificationParam::new(token.clone(), 2.0);
        assert_eq!(progress_update(&plain).text_content(), "2");
        let counted = ProgressNotificationParam::new(token.clone(), 2.5).with_total(10.0);
        assert_eq!(progress_update(&counted).text_content(), "2.5/10");
        let told = ProgressNotificationParam::new(token, 1.0).with_message("indexing");
        let update = progress_update(&told);
        assert_eq!(update.text_content(), "indexing");
        assert_eq!(
            update.details,
            json!({"progress": 1.0, "total": null, "message": "indexing"})
        );
    }
}
