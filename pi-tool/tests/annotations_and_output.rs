//! `#[tool]`'s annotation keys and the output schema of `Json<T>` returns.

use pi_tool::{AgentTool, IntoToolResult, Json, JsonWithoutSchema, ToolAnnotations, tool};
use serde::Serialize;
use serde_json::json;

/// Read a file.
#[tool(read_only, open_world = false)]
async fn read_it(path: String) -> String {
    path
}

/// Delete a file.
#[tool(destructive, idempotent)]
async fn delete_it(path: String) -> String {
    path
}

/// Plain text, no hints.
#[tool]
async fn plain(text: String) -> String {
    text
}

/// A forecast.
#[derive(Serialize, schemars::JsonSchema)]
struct Forecast {
    /// Degrees Celsius.
    celsius: f64,
    city: String,
}

/// Forecast for a city.
#[tool]
async fn forecast(city: String) -> Json<Forecast> {
    Json(Forecast {
        celsius: 21.5,
        city,
    })
}

/// Forecast that may fail.
#[tool]
async fn maybe_forecast(city: String) -> Result<Json<Forecast>, std::io::Error> {
    Ok(Json(Forecast { celsius: 1.0, city }))
}

/// A number (not an object).
#[tool]
async fn count(n: u32) -> Json<u32> {
    Json(n)
}

/// Output without a schema: `T` is only `Serialize` (with `Json<T>` that is a compile error,
/// `tests/compile-fail/ui/json-output-not-json-schema.rs`).
#[derive(Serialize)]
struct Untyped {
    value: u8,
}

/// Untyped output.
#[tool]
async fn untyped() -> JsonWithoutSchema<Untyped> {
    JsonWithoutSchema(Untyped { value: 1 })
}

#[test]
fn annotation_keys_set_the_hints_and_nothing_else() {
    assert_eq!(
        ReadItTool.annotations(),
        ToolAnnotations::new().read_only(true).open_world(false)
    );
    assert_eq!(
        DeleteItTool.annotations(),
        ToolAnnotations {
            destructive: Some(true),
            idempotent: Some(true),
            ..ToolAnnotations::new()
        }
    );
    assert!(PlainTool.annotations().is_empty());
}

#[test]
fn annotations_stay_out_of_what_the_model_sees() {
    let spec = serde_json::to_value(ReadItTool.spec()).unwrap();
    let text = spec.to_string();
    assert!(
        !text.contains("read_only") && !text.contains("readOnly"),
        "{text}"
    );
}

#[test]
fn json_returns_declare_their_output_schema() {
    let schema = ForecastTool
        .output_schema()
        .expect("Json<Forecast> declares a schema");
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["celsius"]["description"],
        "Degrees Celsius."
    );
    assert_eq!(schema["required"], json!(["celsius", "city"]));
    assert_eq!(MaybeForecastTool.output_schema(), Some(schema));
    // Built once: the same allocation every time.
    assert!(std::ptr::eq(
        ForecastTool.output_schema().unwrap(),
        ForecastTool.output_schema().unwrap()
    ));
    assert_eq!(CountTool.output_schema().unwrap()["type"], "integer");
}

#[test]
fn other_returns_declare_no_output_schema() {
    assert_eq!(PlainTool.output_schema(), None);
    assert_eq!(UntypedTool.output_schema(), None);
    // The same result as `Json<T>`: JSON text for the model, the value as details.
    let result = JsonWithoutSchema(Untyped { value: 1 })
        .into_tool_result()
        .unwrap();
    assert_eq!(result.text_content(), r#"{"value":1}"#);
    assert_eq!(result.details, json!({"value": 1}));
}
