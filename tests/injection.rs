//! Injected parameters under any name (a pass test: this file compiling is half the test).
//! `ToolContext` and `State<T>` are recognized by name, with or without a path; any other
//! spelling (a renamed import, a type alias) is marked `#[inject]` and dispatched by type.

use std::sync::Arc;

use pi_tool::ToolContext as Ctx;
use pi_tool::serde_json::{self, json};
use pi_tool::{State, ToolCall, ToolRegistry, tool};

/// A trait object as shared state.
trait Greeter: Send + Sync {
    fn greet(&self, name: &str) -> String;
}

struct English;

impl Greeter for English {
    fn greet(&self, name: &str) -> String {
        format!("Hello, {name}")
    }
}

struct Counter(u32);

type CounterState = State<Counter>;

/// Report the call id, through a renamed `ToolContext`.
#[tool]
async fn call_id(#[inject] ctx: Ctx) -> String {
    ctx.tool_call_id().to_owned()
}

mod qualified_paths {
    use pi_tool::tool;

    /// Fully qualified paths are recognized without a marker.
    #[tool]
    pub(crate) async fn qualified(
        ctx: ::pi_tool::ToolContext,
        counter: pi_tool::State<super::Counter>,
        word: String,
    ) -> String {
        format!("{} {} {word}", ctx.tool_call_id(), counter.0)
    }
}
use qualified_paths::QualifiedTool;

/// A `State<T>` behind a type alias.
#[tool]
fn aliased_state(#[inject] counter: CounterState) -> String {
    counter.0.to_string()
}

/// A trait object as state: `State<dyn Trait>`.
#[tool]
fn greet(name: String, greeter: State<dyn Greeter>) -> String {
    greeter.greet(&name)
}

fn registry() -> ToolRegistry {
    ToolRegistry::new()
        .with(CallIdTool)
        .with(QualifiedTool)
        .with(AliasedStateTool)
        .with(GreetTool)
}

async fn run(tools: &ToolRegistry, name: &str, arguments: serde_json::Value) -> (bool, String) {
    let result = tools.run(&ToolCall::new("call_7", name, arguments)).await;
    (result.is_error, result.text_content())
}

#[tokio::test]
async fn injected_parameters_are_not_in_the_schema() {
    let tools = registry();
    assert_eq!(
        tools.get("call_id").expect("registered").spec().parameters,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        tools
            .get("qualified")
            .expect("registered")
            .spec()
            .parameters["required"],
        json!(["word"])
    );
    assert_eq!(
        tools
            .get("aliased_state")
            .expect("registered")
            .spec()
            .parameters,
        json!({"type": "object", "properties": {}})
    );
}

#[tokio::test]
async fn a_renamed_context_and_an_aliased_state_are_injected() {
    let tools = registry().with_state(Counter(3));
    assert_eq!(
        run(&tools, "call_id", json!({})).await,
        (false, "call_7".into())
    );
    assert_eq!(
        run(&tools, "qualified", json!({"word": "hi"})).await,
        (false, "call_7 3 hi".into())
    );
    assert_eq!(
        run(&tools, "aliased_state", json!({})).await,
        (false, "3".into())
    );
}

#[tokio::test]
async fn state_of_a_trait_object_comes_from_an_arc_dyn() {
    let greeter: Arc<dyn Greeter> = Arc::new(English);
    let tools = registry().with_state(greeter);
    assert_eq!(
        run(&tools, "greet", json!({"name": "Ada"})).await,
        (false, "Hello, Ada".into())
    );
}

#[tokio::test]
async fn state_stored_as_an_arc_serves_state_of_the_value() {
    let tools = registry().with_state(Arc::new(Counter(9)));
    assert_eq!(
        run(&tools, "aliased_state", json!({})).await,
        (false, "9".into())
    );
}

#[tokio::test]
async fn missing_state_names_what_was_asked_and_what_was_stored() {
    // A concrete `Arc<English>` is not an `Arc<dyn Greeter>`: the error says both.
    let tools = registry()
        .with_state(Arc::new(English))
        .with_state(Counter(1));
    let (is_error, text) = run(&tools, "greet", json!({"name": "Ada"})).await;
    assert!(is_error);
    assert_eq!(
        text,
        "the tool needs shared state of type `dyn injection::Greeter`, but none was provided \
         (stored: `alloc::sync::Arc<injection::English>`, `injection::Counter`); add it with \
         `with_state(value)`, or `with_state(Arc<dyn injection::Greeter>)`"
    );
    let (is_error, text) = run(&registry(), "aliased_state", json!({})).await;
    assert!(is_error);
    assert_eq!(
        text,
        "the tool needs shared state of type `injection::Counter`, but none was provided \
         (no shared state was stored); add it with `with_state(value)`, or \
         `with_state(Arc<injection::Counter>)`"
    );
}
