//! What a user of `pi-tool` + `pi-runtime` sees end to end: tools written with `#[tool]`,
//! discovered, handed to an `Agent`, called by a model (scripted here), with shared state, a
//! sequential tool, a failing call and a model mistake the model then corrects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pi_runtime::{
    Agent, AgentEvent, AssistantContent, AssistantMessage, ScriptedModel, StopReason,
};
use pi_tool::serde_json::json;
use pi_tool::{State, ToolContext, ToolRegistry, tool};

/// The shop's stock, shared by every call.
struct Stock(Mutex<HashMap<String, u32>>);

#[derive(Debug, thiserror::Error)]
enum ShopError {
    #[error("unknown product {0:?}")]
    Unknown(String),
    #[error("only {left} {product} left")]
    Short { product: String, left: u32 },
}

/// How many units of a product are in stock.
#[tool(label = "Stock level")]
async fn stock_level(
    /// Product name
    product: String,
    stock: State<Stock>,
) -> Result<String, ShopError> {
    let stock = stock.0.lock().expect("not poisoned");
    let left = stock
        .get(&product)
        .ok_or_else(|| ShopError::Unknown(product.clone()))?;
    Ok(format!("{left} {product} in stock"))
}

/// Reserve units of a product; reservations are made one at a time.
#[tool(label = "Reserve", sequential)]
async fn reserve(
    /// Product name
    product: String,
    /// How many units
    #[schemars(range(min = 1))]
    quantity: u32,
    stock: State<Stock>,
    ctx: ToolContext,
) -> Result<String, ShopError> {
    let mut stock = stock.0.lock().expect("not poisoned");
    let left = stock
        .get_mut(&product)
        .ok_or_else(|| ShopError::Unknown(product.clone()))?;
    if *left < quantity {
        return Err(ShopError::Short {
            product,
            left: *left,
        });
    }
    *left -= quantity;
    Ok(format!(
        "reserved {quantity} {product} ({}); {left} left",
        ctx.tool_call_id()
    ))
}

fn calls(calls: &[(&str, &str, pi_tool::serde_json::Value)]) -> AssistantMessage {
    let content = calls
        .iter()
        .map(|(id, name, args)| AssistantContent::tool_call(*id, *name, args.clone()))
        .collect();
    AssistantMessage::new(content, StopReason::ToolUse)
}

#[tokio::test]
async fn an_agent_runs_discovered_tools_over_several_turns() {
    let stock = Stock(Mutex::new(HashMap::from([
        ("apples".to_owned(), 10),
        ("pears".to_owned(), 2),
    ])));
    let tools = ToolRegistry::discover()
        .expect("unique names")
        .with_state(stock);
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        ["reserve", "stock_level"]
    );

    let model = Arc::new(ScriptedModel::recording([
        // Turn 1: two lookups in parallel, one of a product that does not exist.
        calls(&[
            ("c1", "stock_level", json!({"product": "apples"})),
            ("c2", "stock_level", json!({"product": "plums"})),
        ]),
        // Turn 2: a reservation with a bad quantity and a misspelled tool.
        calls(&[
            ("c3", "reserve", json!({"product": "apples", "quantity": 0})),
            ("c4", "reserv", json!({})),
        ]),
        // Turn 3: the model corrects itself; too many pears fails.
        calls(&[
            (
                "c5",
                "reserve",
                json!({"product": "apples", "quantity": "3"}),
            ),
            ("c6", "reserve", json!({"product": "pears", "quantity": 5})),
        ]),
        AssistantMessage::new(
            vec![AssistantContent::text("Reserved 3 apples.")],
            StopReason::Stop,
        ),
    ]));
    let agent = Agent::new(model.clone())
        .with_system_prompt("You run a shop.")
        .with_tools(tools);
    let ends = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&ends);
    agent.subscribe(move |event, _signal| {
        if let AgentEvent::ToolExecutionEnd {
            call,
            result,
            is_error,
            ..
        } = &event
        {
            let text = result.as_tool_result().expect("a tool result").text();
            seen.lock()
                .expect("not poisoned")
                .push((call.id().to_owned(), *is_error, text));
        }
        async {}
    });

    agent
        .prompt("Reserve three apples.")
        .await
        .expect("idle agent");

    let ends = ends.lock().expect("not poisoned").clone();
    let expected = [
        ("c1", false, "10 apples in stock"),
        ("c2", true, "unknown product \"plums\""),
        (
            "c3",
            true,
            "Validation failed for tool \"reserve\":\n  - quantity: expected at least 1; got 0\n\nReceived arguments:\n{\n  \"product\": \"apples\",\n  \"quantity\": 0\n}",
        ),
        (
            "c4",
            true,
            "Tool reserv not found (did you mean \"reserve\"?)",
        ),
        ("c5", false, "reserved 3 apples (c5); 7 left"),
        ("c6", true, "only 2 pears left"),
    ];
    let expected: Vec<(String, bool, String)> = expected
        .iter()
        .map(|(id, error, text)| ((*id).to_owned(), *error, (*text).to_owned()))
        .collect();
    // Ends come in call order here: turn 1's tools finish at once, and turns 2 and 3 run one
    // call at a time because they call a sequential tool.
    assert_eq!(ends, expected);

    let roles: Vec<&str> = agent.messages().iter().map(|m| m.role()).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant"
        ]
    );
    // Every request carried both tools and the whole conversation so far.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[3].tool_names(), ["reserve", "stock_level"]);
    assert_eq!(requests[3].roles().len(), 10);
    assert_eq!(requests[0].system_prompt, "You run a shop.");
}
