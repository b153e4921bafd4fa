//! One `tools/call`: `pi-tool`'s pipeline, as every host runs it (limits, prepare, normalize,
//! validate, the gate of sequential tools, execution within the call's timeout, the blocking
//! pool, the result-size limit), plus what MCP adds: progress notifications from
//! `ctx.update()`, the request's cancellation, approval asked of the client
//! ([`approval`](super::approval)), and the MCP result.

use std::sync::Arc;

use pi_tool::{
    CallOutcome, Content, NestedHost, ToolCall, ToolContext, ToolResult, run_decided_call,
    run_tool_call_or_wait,
};
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{Peer, RequestContext};
use serde_json::Value;
use tokio::sync::mpsc;

use super::approval::{Asked, ask_client};
use super::catalog::{Catalog, OutputShape, ServedTool, WRAPPED_OUTPUT_KEY};

/// Runs `served` with the client's arguments; every outcome is a result (invalid arguments,
/// timeouts, `Err` and panics are `isError: true` with the loop's texts). A call that needs
/// approval is put to the client first; on a 2026-07-28 session the response may be
/// `input_required`, the approval form the client answers in its retry.
pub(crate) async fn run(
    catalog: &Arc<Catalog>,
    served: &ServedTool,
    mut params: CallToolRequestParams,
    request: RequestContext<RoleServer>,
) -> CallToolResponse {
    // The arguments move into the call; the rest (an approval's answer) stays with `params`.
    let call = ToolCall::new(
        request.id.to_string(),
        served.tool.spec().name.clone(),
        Value::Object(params.arguments.take().unwrap_or_default()),
    );
    // The call's own token: cancelling it (a client's cancel, an HTTP disconnect) stops this
    // call and nothing else.
    let mut ctx = ToolContext::new(call.id.clone())
        .with_state(catalog.state.clone())
        .with_signal(request.ct.child_token())
        .with_nested_host(Arc::clone(catalog) as Arc<dyn NestedHost>);
    let progress = request.meta.get_progress_token().map(|token| {
        let (sender, receiver) = mpsc::unbounded_channel::<Progress>();
        let updates = sender.clone();
        ctx = ctx
            .clone()
            .with_updates(Arc::new(move |partial: ToolResult| {
                let _ = updates.send(Progress::Update(partial.text_content()));
            }));
        (
            sender,
            forward_progress(request.peer.clone(), token, receiver),
        )
    });
    // A sequential call waits for its turn in the pipeline; a cancel while it waits means it
    // never runs.
    let answered = answer(catalog, served, &call, ctx, &params, &request);
    match progress {
        None => answered.await,
        Some((sender, forwarder)) => {
            // Updates are forwarded while the tool runs; the last one is sent before the result.
            let execution = async {
                let response = answered.await;
                let _ = sender.send(Progress::Done);
                response
            };
            tokio::join!(execution, forwarder).0
        }
    }
}

/// The call through the pipeline; if it waits, the client's decision, then the call as decided.
async fn answer(
    catalog: &Arc<Catalog>,
    served: &ServedTool,
    call: &ToolCall,
    ctx: ToolContext,
    params: &CallToolRequestParams,
    request: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let waiting = match run_tool_call_or_wait(&**catalog, call, ctx.clone(), None).await {
        CallOutcome::Done(result) => return to_mcp(result, served.output).into(),
        CallOutcome::Waiting(waiting) => waiting,
    };
    match ask_client(&waiting, params, request).await {
        Asked::Decided(decision) => {
            let result = run_decided_call(&**catalog, &waiting, decision, ctx).await;
            to_mcp(result, served.output).into()
        }
        Asked::Refused(result) => to_mcp(result, served.output).into(),
        Asked::InputRequired(form) => form.into(),
    }
}

enum Progress {
    Update(String),
    Done,
}

/// Sends each update as `notifications/progress` with an increasing counter, in order.
async fn forward_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut receiver: mpsc::UnboundedReceiver<Progress>,
) {
    let mut count = 0u32;
    while let Some(Progress::Update(text)) = receiver.recv().await {
        count += 1;
        let mut param = ProgressNotificationParam::new(token.clone(), f64::from(count));
        if !text.is_empty() {
            param = param.with_message(text);
        }
        // A client gone mid-call is noticed by the transport; the call still finishes.
        let _ = peer.notify_progress(param).await;
    }
}

/// Our result as MCP's: content blocks, `isError`, and `details` as `structuredContent`.
fn to_mcp(result: ToolResult, output: OutputShape) -> CallToolResult {
    let mut content: Vec<ContentBlock> = result.content.into_iter().map(block).collect();
    if result.is_error {
        return CallToolResult::error(content);
    }
    let structured = match (output, result.details) {
        (OutputShape::Untyped, details @ Value::Object(_)) if !is_empty_object(&details) => {
            Some(details)
        }
        (OutputShape::Untyped, _) => None,
        (OutputShape::Object, details) => {
            let text = details.to_string();
            if !content
                .iter()
                .any(|block| block.as_text().is_some_and(|t| t.text == text))
            {
                content.push(ContentBlock::text(text));
            }
            Some(details)
        }
        (OutputShape::Wrapped, details) => {
            let mut wrapper = JsonObject::new();
            wrapper.insert(WRAPPED_OUTPUT_KEY.to_owned(), details);
            Some(Value::Object(wrapper))
        }
    };
    let mut mcp = CallToolResult::success(content);
    mcp.structured_content = structured;
    mcp
}

fn is_empty_object(value: &Value) -> bool {
    value.as_object().is_some_and(JsonObject::is_empty)
}

fn block(content: Content) -> ContentBlock {
    match content {
        Content::Text { text } => ContentBlock::text(text),
        Content::Image { data, mime_type } => ContentBlock::image(data, mime_type),
    }
}
