//! `#[tool]` reads and describes each model argument through its own helpers (so a type that is
//! not `Deserialize` or `JsonSchema` gets one error saying what to derive): the schema and the
//! values read are those of a plain struct deriving both.

use pi_tool::{AgentTool, ToolCall, ToolRegistry, schema_for, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// A point on the map.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Point {
    /// East-west.
    pub x: f64,
    /// North-south.
    pub y: f64,
}

/// How to draw.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Style {
    /// A line.
    Line,
    /// Dots.
    Dots,
}

/// Draw a path.
#[tool]
async fn draw(
    /// Where it starts.
    start: Point,
    /// The points after it.
    points: Vec<Point>,
    style: Style,
    /// How many times.
    times: u32,
    /// A label, if any.
    label: Option<String>,
) -> String {
    format!("{start:?} {points:?} {style:?} {times} {label:?}")
}

/// The same fields as `draw`'s, derived the ordinary way.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct DrawParams2 {
    /// Where it starts.
    start: Point,
    /// The points after it.
    points: Vec<Point>,
    style: Style,
    /// How many times.
    times: u32,
    /// A label, if any.
    label: Option<String>,
}

#[test]
fn the_schema_is_the_plain_derives() {
    let mut ours = DrawTool.spec().parameters.clone();
    let mut plain = schema_for::<DrawParams2>();
    for schema in [&mut ours, &mut plain] {
        schema.as_object_mut().unwrap().remove("title");
    }
    assert_eq!(ours, plain);
}

#[tokio::test]
async fn arguments_are_read_as_before_and_an_option_may_be_left_out() {
    let tools = ToolRegistry::new().with(DrawTool);
    let call = ToolCall::new(
        "c1",
        "draw",
        json!({"start": {"x": 1.0, "y": 2.0}, "points": [], "style": "dots", "times": 2}),
    );
    let result = tools.run(&call).await;
    assert!(!result.is_error, "{}", result.text_content());
    assert_eq!(
        result.text_content(),
        "Point { x: 1.0, y: 2.0 } [] Dots 2 None"
    );
}
