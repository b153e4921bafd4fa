//! What the server knows of each tool, built once when serving starts: the MCP tool
//! descriptions (sorted by name, as `tools/list` sends them) and per-tool call settings.

use std::collections::HashMap;
use std::sync::Arc;

use pi_tool::{
    AgentTool, BoxFuture, CallGate, CallLimits, ExecutionMode, NestedHost, StateMap,
    ToolAnnotations, ToolCall, ToolContext, ToolHost, ToolRegistry, ToolResult, run_nested_call,
};
use rmcp::model::{
    Implementation, InitializeResult, JsonObject, ServerCapabilities, Tool,
    ToolAnnotations as McpAnnotations,
};
use serde_json::{Value, json};

/// The key a non-object output is wrapped under, so `structuredContent` is always an object.
pub(crate) const WRAPPED_OUTPUT_KEY: &str = "result";

/// One served tool.
pub(crate) struct ServedTool {
    pub(crate) tool: Arc<dyn AgentTool>,
    /// How `details` become `structuredContent`.
    pub(crate) output: OutputShape,
}

/// How a result's `details` reach `structuredContent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutputShape {
    /// No output schema: an object `details` is sent as is; anything else is not sent.
    Untyped,
    /// An object output schema: `details` as is, plus its JSON text when the content lacks it.
    Object,
    /// A non-object output schema: `details` under [`WRAPPED_OUTPUT_KEY`].
    Wrapped,
}

/// Everything the handler needs, shared by every session; what a call lends `pi-tool`'s
/// pipeline (the registry's tools and limits, and one gate for every session: a sequential
/// tool's call never runs while another call of this server runs).
pub(crate) struct Catalog {
    pub(crate) listed: Vec<Tool>,
    pub(crate) by_name: HashMap<String, ServedTool>,
    pub(crate) state: StateMap,
    pub(crate) info: InitializeResult,
    limits: CallLimits,
    /// `Some` when a tool is sequential.
    gate: Option<CallGate>,
}

impl Catalog {
    pub(crate) fn new(
        registry: &ToolRegistry,
        name: &str,
        version: &str,
        instructions: Option<&str>,
    ) -> Self {
        let mut listed = Vec::with_capacity(registry.len());
        let mut by_name = HashMap::with_capacity(registry.len());
        for tool in registry.tools() {
            let (described, output) = describe(tool.as_ref());
            // A tool only code may call is served to nested calls, listed to no client.
            if tool.callers().allows_model() {
                listed.push(described);
            }
            by_name.insert(
                tool.spec().name.clone(),
                ServedTool {
                    tool: Arc::clone(tool),
                    output,
                },
            );
        }
        let any_sequential = registry
            .tools()
            .any(|tool| tool.execution_mode() == Some(ExecutionMode::Sequential));
        // The registry iterates sorted by name; keep the promise explicit.
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(name, version));
        if let Some(instructions) = instructions {
            info = info.with_instructions(instructions);
        }
        Catalog {
            listed,
            by_name,
            state: registry.state().clone(),
            info,
            limits: *registry.call_limits(),
            gate: any_sequential.then(CallGate::new),
        }
    }

    /// Registered names, sorted (for "did you mean").
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.listed.iter().map(|tool| tool.name.as_ref())
    }
}

impl ToolHost for Catalog {
    fn tool(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.by_name.get(name).map(|served| &served.tool)
    }

    fn tool_names(&self) -> Vec<&str> {
        self.names().collect()
    }

    fn limits(&self) -> &CallLimits {
        &self.limits
    }

    fn gate(&self) -> Option<&CallGate> {
        self.gate.as_ref()
    }
}

/// A served tool's nested calls (`ctx.call_tool`) run through the same pipeline, over every
/// tool of the registry (those listed to no client included).
impl NestedHost for Catalog {
    fn run_nested<'a>(
        &'a self,
        call: &'a ToolCall,
        parent: &'a ToolContext,
        ctx: ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(run_nested_call(self, None, call, parent, ctx))
    }

    fn limits(&self) -> &CallLimits {
        &self.limits
    }
}

/// The MCP description of a tool, and how its output is shaped.
fn describe(tool: &dyn AgentTool) -> (Tool, OutputShape) {
    let spec = tool.spec();
    let mut described = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(object_root(&spec.parameters)),
    )
    .with_title(tool.label());
    let annotations = tool.annotations();
    if !annotations.is_empty() {
        described = described.with_annotations(mcp_annotations(annotations));
    }
    let shape = match tool.output_schema() {
        None => OutputShape::Untyped,
        Some(schema) if declares_object(schema) => {
            described = described.with_raw_output_schema(Arc::new(object_root(schema)));
            OutputShape::Object
        }
        Some(schema) => {
            described = described.with_raw_output_schema(Arc::new(wrapped(schema)));
            OutputShape::Wrapped
        }
    };
    (described, shape)
}

fn mcp_annotations(hints: ToolAnnotations) -> McpAnnotations {
    McpAnnotations::from_raw(
        None,
        hints.read_only,
        hints.destructive,
        hints.idempotent,
        hints.open_world,
    )
}

fn declares_object(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// `schema` as an object whose root says `"type": "object"`, as MCP requires of input and
/// output schemas. A hand-written schema without a root type gets one.
fn object_root(schema: &Value) -> JsonObject {
    let mut root = match schema {
        Value::Object(map) => map.clone(),
        _ => JsonObject::new(),
    };
    root.insert("type".to_owned(), Value::String("object".to_owned()));
    root
}

/// A non-object output schema wrapped as `{"result": <schema>}`; definitions move to the root so
/// `#/$defs/..` references still resolve.
fn wrapped(schema: &Value) -> JsonObject {
    let mut inner = schema.clone();
    let defs = inner.as_object_mut().and_then(|map| map.remove("$defs"));
    let mut root = json!({
        "type": "object",
        "properties": { WRAPPED_OUTPUT_KEY: inner },
        "required": [WRAPPED_OUTPUT_KEY],
    });
    if let (Some(defs), Some(map)) = (defs, root.as_object_mut()) {
        map.insert("$defs".to_owned(), defs);
    }
    match root {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_object_outputs_are_wrapped_and_keep_their_definitions() {
        let schema = json!({"type": "array", "items": {"$ref": "#/$defs/Node"}, "$defs": {"Node": {"type": "object"}}});
        let once = Value::Object(wrapped(&schema));
        assert_eq!(
            once,
            json!({
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "required": ["result"],
                "$defs": {"Node": {"type": "object"}},
            })
        );
        assert_eq!(
            Value::Object(wrapped(&json!(true))),
            json!({"type": "object", "properties": {"result": true}, "required": ["result"]})
        );
    }

    #[test]
    fn every_root_is_an_object() {
        assert_eq!(
            Value::Object(object_root(&json!({"properties": {}}))),
            json!({"properties": {}, "type": "object"})
        );
        assert_eq!(
            Value::Object(object_root(&json!(true))),
            json!({"type": "object"})
        );
    }
}
