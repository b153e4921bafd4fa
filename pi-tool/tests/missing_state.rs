//! A tool that takes `State<T>` with no `T` given is reported before the first call, naming the
//! tool and the type.

use std::sync::Arc;

use pi_tool::{
    AgentTool, Deferred, RegistryError, State, StateType, ToolRegistry, missing_state, tool,
};

/// Settings the tools read.
pub struct Config {
    greeting: String,
}

/// A counter, given as an `Arc`.
pub struct Visits;

/// Greet someone.
#[tool]
async fn greet(name: String, config: State<Config>) -> String {
    format!("{}, {name}", config.greeting)
}

/// Count a visit.
#[tool]
async fn visit(_visits: State<Visits>, config: State<Config>) -> String {
    config.greeting.clone()
}

/// Say hello without any state.
#[tool]
async fn hello() -> String {
    "hello".to_owned()
}

#[test]
fn a_tool_lists_the_state_it_takes() {
    assert_eq!(GreetTool.state_types(), [StateType::of::<Config>()]);
    assert_eq!(
        VisitTool.state_types(),
        [StateType::of::<Visits>(), StateType::of::<Config>()]
    );
    assert!(HelloTool.state_types().is_empty());
    // A deferred tool takes what it wraps.
    let deferred = Deferred::wrap(Arc::new(GreetTool));
    assert_eq!(deferred.state_types(), [StateType::of::<Config>()]);
}

#[test]
fn the_registry_names_the_tool_and_the_type_that_is_missing() {
    let tools = ToolRegistry::new().with(HelloTool).with(GreetTool);
    let err = tools.check_state().unwrap_err();
    assert_eq!(
        err,
        RegistryError::MissingState {
            tool: "greet".into(),
            type_name: std::any::type_name::<Config>().into(),
        }
    );
    let message = err.to_string();
    assert!(message.contains("`greet`"), "{message}");
    assert!(message.contains("missing_state::Config"), "{message}");
    assert!(message.contains("with_state"), "{message}");
}

#[test]
fn state_given_as_a_value_or_an_arc_is_found() {
    let tools = ToolRegistry::new()
        .with(GreetTool)
        .with(VisitTool)
        .with_state(Config {
            greeting: "hi".into(),
        });
    let missing = missing_state(tools.tools(), tools.state());
    let names: Vec<(&str, &str)> = missing
        .iter()
        .map(|m| (m.tool.as_str(), m.state_type.name()))
        .collect();
    assert_eq!(names, [("visit", std::any::type_name::<Visits>())]);
    let tools = tools.with_state(Arc::new(Visits));
    assert_eq!(tools.check_state(), Ok(()));
}
