//! One MCP server tool as an `AgentTool`: the loop validates its arguments against the server's
//! schema, and a call becomes a `tools/call` request with progress, cancellation and a timeout.

use std::sync::Arc;
use std::time::Duration;

use pi_tool::{
    AgentTool, ArgumentValidator, BoxFuture, Content, ToolAnnotations, ToolContext, ToolError,
    ToolResult, ToolSpec,
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientRequest, JsonObject, ProgressNotificationParam, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::connection::Connection;
use super::content::to_tool_result;

/// A tool of an MCP server, imported as an [`AgentTool`].
///
/// Its schema is the server's `inputSchema` (made provider-neutral with
/// [`pi_tool::provider_neutral`]); the loop validates a model's arguments against it with our
/// validator before anything is sent, so the model gets our error texts. The tool keeps its
/// connection alive: it works as long as it is registered somewhere, even after the
/// [`McpClient`](crate::McpClient) is dropped.
pub struct McpTool {
    spec: ToolSpec,
    label: String,
    mcp_name: String,
    annotations: ToolAnnotations,
    output_schema: Option<Value>,
    validator: ArgumentValidator,
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
        let parameters = input_schema(&tool.input_schema)?;
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
        Ok(McpTool {
            validator: ArgumentValidator::new(&spec),
            spec,
            label,
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

    /// The server's `outputSchema`, when it declared one.
    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    fn rewrites_arguments(&self) -> bool {
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
        let connection = Arc::clone(&self.connection);
        let mcp_name = self.mcp_name.clone();
        Box::pin(async move { call(&connection, mcp_name, args, ctx).await })
    }
}

/// The server's `inputSchema` as our parameters schema: root `type: "object"` (added when
/// missing; any other root type is refused), made provider-neutral.
fn input_schema(schema: &JsonObject) -> Result<Value, String> {
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
    Ok(pi_tool::provider_neutral(Value::Object(schema)))
}

/// One `tools/call`: progress -> `ctx.update`, our abort -> `notifications/cancelled`, no answer
/// (and no progress) within the connection's call timeout -> cancelled and an error result.
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
    let peer = connection.peer();
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new(mcp_name.clone()).with_arguments(arguments),
    ));
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|err| ToolError::new(failure_text(server, &mcp_name, &err)))?;
    let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
    let _route = connection
        .progress_routes()
        .register(handle.progress_token.clone(), progress_tx);
    let request_id = handle.id.clone();
    let response = handle.await_response();
    tokio::pin!(response);
    let timeout = connection.call_timeout();
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
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
                    Ok(ServerResult::CallToolResult(result)) => Ok(to_tool_result(result)),
                    Ok(ServerResult::EmptyResult(_)) => Ok(ToolResult::new(Vec::new(), Value::Null)),
                    Ok(ServerResult::InputRequiredResult(_)) => Err(ToolError::new(format!(
                        "{server}: tool {mcp_name} asked for user input, which this client does not provide"
                    ))),
                    Ok(_) => Err(ToolError::new(format!(
                        "{server}: tool {mcp_name} answered with something other than a tool result"
                    ))),
                    Err(err) => Err(ToolError::new(failure_text(server, &mcp_name, &err))),
                };
            }
            () = signal.cancelled() => {
                send_cancel(peer.clone(), request_id, "the agent aborted the call");
                return Err(ToolError::new("Operation aborted"));
            }
            Some(progress) = progress_rx.recv() => {
                ctx.update(progress_update(&progress));
                deadline.as_mut().reset(tokio::time::Instant::now() + timeout);
            }
            () = &mut deadline => {
                send_cancel(peer.clone(), request_id, "timed out");
                return Ok(ToolResult::error(format!(
                    "{server}: tool {mcp_name} sent neither a result nor progress for {}; the call was cancelled",
                    human_duration(timeout)
                )));
            }
        }
    }
}

/// What the model reads when the request itself failed (not a tool error: those are results).
fn failure_text(server: &str, mcp_name: &str, err: &ServiceError) -> String {
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
