use pi_tool::{tool, State, ToolCall, ToolContext, ToolRegistry};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Unit { Celsius, Fahrenheit }

pub struct Db(String);

/// Get the current weather for a city.
#[tool(label = "Weather", sequential)]
async fn get_weather(
    /// City name, e.g. "Paris"
    city: String,
    /// Temperature unit
    unit: Option<Unit>,
    #[schemars(range(min = 1, max = 7))] days: Option<u8>,
    db: State<Db>,
    ctx: ToolContext,
) -> Result<String, std::io::Error> {
    Ok(format!("{city} {unit:?} {days:?} {} {}", db.0, ctx.tool_call_id()))
}

#[tokio::test]
async fn smoke() {
    let tools = ToolRegistry::discover().unwrap().with_state(Db("db".into()));
    let t = tools.get("get_weather").unwrap();
    println!("{}", serde_json::to_string_pretty(&t.spec()).unwrap());
    for args in [json!({"city": "Paris", "days": "3"}), json!({}), json!({"city": 5, "unit": "kelvin", "days": 9, "extra": 1}), json!("{\"city\":\"x\"}"), json!("nope")] {
        let r = tools.run(&ToolCall::new("c1", "get_weather", args)).await;
        println!("{} {}", r.is_error, r.text_content());
    }
    let r = tools.run(&ToolCall::new("c1", "get_wether", json!({}))).await;
    println!("{}", r.text_content());
}
