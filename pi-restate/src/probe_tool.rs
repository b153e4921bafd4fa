//! A tool that answers every `AgentTool` question with something other than the default: what
//! the wrappers' tests check each answer is passed on with.

use std::time::Duration;

use pi_tool::{
    AgentTool, BoxFuture, ExecutionMode, Replay, StateType, ToolAnnotations, ToolCallers,
    ToolContext, ToolError, ToolResult, ToolSpec,
};
use serde_json::{Value, json};

/// A tool that answers every question with something other than the default.
pub(crate) struct Probe {
    spec: ToolSpec,
    examples: Vec<Value>,
    keywords: Vec<String>,
    output_schema: Value,
}

impl Probe {
    pub(crate) fn new() -> Self {
        Probe {
            spec: ToolSpec {
                name: "probe".to_owned(),
                description: "Answers every question.".to_owned(),
                parameters: json!({"type": "object"}),
            },
            examples: vec![json!({})],
            keywords: vec!["sonde".to_owned()],
            output_schema: json!({"type": "object"}),
        }
    }
}

impl AgentTool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn label(&self) -> &str {
        "Probe"
    }
    fn execution_mode(&self) -> Option<ExecutionMode> {
        Some(ExecutionMode::Sequential)
    }
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(7))
    }
    fn blocking(&self) -> bool {
        true
    }
    fn deferred(&self) -> bool {
        true
    }
    fn input_examples(&self) -> &[Value] {
        &self.examples
    }
    fn keywords(&self) -> &[String] {
        &self.keywords
    }
    fn state_types(&self) -> Vec<StateType> {
        vec![StateType::of::<u32>()]
    }
    fn eager_input_streaming(&self) -> bool {
        true
    }
    fn callers(&self) -> ToolCallers {
        ToolCallers::Code
    }
    fn replay(&self) -> Option<Replay> {
        Some(Replay::Never)
    }
    fn aborted_message(&self) -> &str {
        "Probe aborted"
    }
    fn needs_approval(&self, _args: &Value, _ctx: &ToolContext) -> bool {
        true
    }
    fn external(&self) -> bool {
        true
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::new().read_only(true)
    }
    fn output_schema(&self) -> Option<&Value> {
        Some(&self.output_schema)
    }
    fn prepare_arguments(&self, _args: Value) -> Result<Value, ToolError> {
        Ok(json!({"prepared": true}))
    }
    fn rewrites_arguments(&self) -> bool {
        true
    }
    fn execute(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolResult, ToolError>> {
        Box::pin(async { Ok(ToolResult::text("probed")) })
    }
}
