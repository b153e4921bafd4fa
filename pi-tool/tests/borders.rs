//! Values at the borders of what a parameter type can hold (issue 8, items 11-17): every value
//! the type cannot hold is refused by validation with our message, never by serde after it;
//! normalization converts exactly or refuses; `null` is data except for an optional property;
//! tuples are normalized; a value inside a union is explained from the branch it fits.

// The parameter types' fields are read through their `Debug` output, which rustc ignores.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::num::{NonZeroI32, NonZeroU8, NonZeroU64};

use pi_tool::{AgentTool, ToolCall, ToolRegistry, tool};
use serde_json::{Value, json};

/// Echo every integer width back.
#[tool]
#[allow(clippy::too_many_arguments)]
async fn widths(
    a8: Option<i8>,
    a16: Option<i16>,
    a32: Option<i32>,
    a64: Option<i64>,
    a128: Option<i128>,
    asize: Option<isize>,
    b8: Option<u8>,
    b16: Option<u16>,
    b32: Option<u32>,
    b64: Option<u64>,
    b128: Option<u128>,
    bsize: Option<usize>,
    nz8: Option<NonZeroU8>,
    nz32: Option<NonZeroI32>,
    nz64: Option<NonZeroU64>,
    f: Option<f32>,
    d: Option<f64>,
) -> String {
    format!(
        "{a8:?} {a16:?} {a32:?} {a64:?} {a128:?} {asize:?} {b8:?} {b16:?} {b32:?} {b64:?} {b128:?} {bsize:?} {nz8:?} {nz32:?} {nz64:?} {f:?} {d:?}"
    )
}

async fn call(tool: impl AgentTool, arguments: Value) -> (bool, String) {
    let name = tool.spec().name.clone();
    let tools = ToolRegistry::new().with(tool);
    let result = tools.run(&ToolCall::new("c1", &name, arguments)).await;
    (result.is_error, result.text_content())
}

/// The problem lines of a failed call; panics (with the text) when the call did not fail in
/// validation: a serde error after validation is exactly what these tests rule out.
async fn problems(tool: impl AgentTool, arguments: Value) -> Vec<String> {
    let (is_error, text) = call(tool, arguments).await;
    assert!(
        is_error && text.starts_with("Validation failed for tool"),
        "expected a validation error, got: {text}"
    );
    text.lines()
        .filter_map(|line| line.strip_prefix("  - "))
        .map(str::to_owned)
        .collect()
}

async fn output(tool: impl AgentTool, arguments: Value) -> String {
    let (is_error, text) = call(tool, arguments).await;
    assert!(!is_error, "expected success, got: {text}");
    text
}

#[tokio::test]
async fn every_integer_width_refuses_what_it_cannot_hold() {
    let cases: &[(&str, Value, &str)] = &[
        ("a8", json!(128), "a8: expected at most 127; got 128"),
        ("a8", json!(-129), "a8: expected at least -128; got -129"),
        (
            "a16",
            json!(32768),
            "a16: expected at most 32767; got 32768",
        ),
        (
            "a32",
            json!(2_147_483_648u64),
            "a32: expected at most 2147483647; got 2147483648",
        ),
        (
            "a32",
            json!(-2_147_483_649i64),
            "a32: expected at least -2147483648; got -2147483649",
        ),
        (
            "a64",
            json!(9_223_372_036_854_775_808u64),
            "a64: expected at most 9223372036854775807; got 9223372036854775808",
        ),
        (
            "a64",
            json!(1e19),
            "a64: expected at most 9223372036854775807; got 10000000000000000000",
        ),
        (
            "a128",
            json!(1e20),
            "a128: expected at most 18446744073709551615; got 1e+20",
        ),
        (
            "asize",
            json!(1e300),
            "asize: expected at most 9223372036854775807; got 1e+300",
        ),
        ("b8", json!(256), "b8: expected at most 255; got 256"),
        ("b8", json!(-1), "b8: expected at least 0; got -1"),
        (
            "b16",
            json!(65536),
            "b16: expected at most 65535; got 65536",
        ),
        (
            "b32",
            json!(4_294_967_296u64),
            "b32: expected at most 4294967295; got 4294967296",
        ),
        (
            "b64",
            json!(1e300),
            "b64: expected at most 18446744073709551615; got 1e+300",
        ),
        ("b64", json!(-1), "b64: expected at least 0; got -1"),
        (
            "b128",
            json!(1e20),
            "b128: expected at most 18446744073709551615; got 1e+20",
        ),
        ("bsize", json!(-5), "bsize: expected at least 0; got -5"),
        ("nz8", json!(0), "nz8: expected at least 1; got 0"),
        ("nz8", json!(256), "nz8: expected at most 255; got 256"),
        ("nz32", json!(0), "nz32: must not be 0"),
        ("nz64", json!(0), "nz64: expected at least 1; got 0"),
        (
            "f",
            json!(3.5e38),
            "f: expected at most 3.4028234663852886e+38; got 3.5e+38",
        ),
        (
            "f",
            json!(-3.5e38),
            "f: expected at least -3.4028234663852886e+38; got -3.5e+38",
        ),
    ];
    for (name, value, expected) in cases {
        let mut arguments = serde_json::Map::new();
        arguments.insert((*name).to_owned(), value.clone());
        assert_eq!(
            problems(WidthsTool, Value::Object(arguments)).await,
            [*expected],
            "{name} = {value}"
        );
    }
}

#[tokio::test]
async fn every_integer_width_accepts_its_extremes() {
    let text = output(
        WidthsTool,
        json!({
            "a8": -128, "a16": 32767, "a32": -2_147_483_648i64, "a64": i64::MIN,
            "a128": u64::MAX, "asize": isize::MAX, "b8": 255, "b16": 0, "b32": u32::MAX,
            "b64": u64::MAX, "b128": u64::MAX, "bsize": 1e19, "nz8": 255, "nz32": -1,
            "nz64": u64::MAX, "f": 3.4028234663852886e38, "d": 1e308
        }),
    )
    .await;
    assert_eq!(
        text,
        "Some(-128) Some(32767) Some(-2147483648) Some(-9223372036854775808) Some(18446744073709551615) Some(9223372036854775807) Some(255) Some(0) Some(4294967295) Some(18446744073709551615) Some(18446744073709551615) Some(10000000000000000000) Some(255) Some(-1) Some(18446744073709551615) Some(3.4028235e38) Some(1e308)"
    );
}

#[test]
fn the_schema_says_the_bounds_and_keeps_no_made_up_format() {
    let schema = WidthsTool.spec().parameters.clone();
    let properties = schema["properties"].as_object().expect("properties");
    for (name, property) in properties {
        assert!(
            property.get("format").is_none(),
            "{name} has a format JSON Schema does not define: {property}"
        );
    }
    assert_eq!(
        properties["a32"],
        json!({"type": ["integer", "null"], "minimum": i32::MIN, "maximum": i32::MAX})
    );
    assert_eq!(
        properties["b128"],
        json!({"type": ["integer", "null"], "minimum": 0, "maximum": u64::MAX})
    );
    assert_eq!(properties["d"], json!({"type": ["number", "null"]}));
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Amount {
    Exact(i64),
    Words(String),
}

/// An untagged union with an `i64` variant.
#[tool]
async fn pay(amount: Amount, #[schemars(range(min = 1, max = 1000))] count: u16) -> String {
    format!("{amount:?} x{count}")
}

#[tokio::test]
async fn an_untagged_union_refuses_a_number_too_large_for_its_integer() {
    assert_eq!(
        problems(PayTool, json!({"amount": 1e19, "count": 1})).await,
        ["amount: expected at most 9223372036854775807; got 10000000000000000000"]
    );
    assert_eq!(
        output(PayTool, json!({"amount": "ten", "count": 1000})).await,
        "Words(\"ten\") x1000"
    );
}

#[tokio::test]
async fn a_users_range_narrower_than_the_type_is_kept() {
    assert_eq!(
        problems(PayTool, json!({"amount": 1, "count": 1001})).await,
        ["count: expected at most 1000; got 1001"]
    );
    assert_eq!(
        PayTool.spec().parameters["properties"]["count"],
        json!({"type": "integer", "minimum": 1, "maximum": 1000})
    );
}

#[tokio::test]
async fn numeric_strings_are_converted_as_their_json_numbers_or_refused() {
    assert_eq!(
        problems(WidthsTool, json!({"b8": "5.0000000000000001"})).await,
        ["b8: expected integer or null; got \"5.0000000000000001\""]
    );
    assert_eq!(
        output(
            WidthsTool,
            json!({"b64": "9007199254740993.0", "b8": "5.000"})
        )
        .await,
        "None None None None None None Some(5) None None Some(9007199254740993) None None None None None None None"
    );
    assert_eq!(
        problems(WidthsTool, json!({"d": "1e-400"})).await,
        ["d: expected number or null; got \"1e-400\""]
    );
    // A float with more digits than an f64 holds: the string means what the JSON number does
    // (both are rounded to the nearest f64).
    let literal: Value =
        serde_json::from_str(r#"{"d": 3.14159265358979323846}"#).expect("a JSON object");
    assert_eq!(
        output(WidthsTool, json!({"d": "3.14159265358979323846"})).await,
        output(WidthsTool, literal).await
    );
    assert!(
        output(WidthsTool, json!({"d": "3.14159265358979323846"}))
            .await
            .ends_with("Some(3.141592653589793)")
    );
    assert_eq!(
        output(WidthsTool, json!({"d": "0.1", "f": "-2.5e3"})).await,
        "None None None None None None None None None None None None None None None Some(-2500.0) Some(0.1)"
    );
}

/// Environment and free-form data.
#[tool]
async fn env(
    env: BTreeMap<String, Option<String>>,
    data: Option<Value>,
    note: Option<String>,
) -> String {
    format!("{env:?} {data:?} {note:?}")
}

#[tokio::test]
async fn null_is_kept_inside_maps_and_free_form_values() {
    assert_eq!(
        output(
            EnvTool,
            json!({"env": {"A": "1", "B": null}, "data": {"nested": null, "list": [null]}, "note": null})
        )
        .await,
        "{\"A\": Some(\"1\"), \"B\": None} Some(Object {\"nested\": Null, \"list\": Array [Null]}) None"
    );
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Extra {
    name: String,
    #[serde(flatten)]
    rest: BTreeMap<String, Option<i32>>,
}

/// A flattened map.
#[tool]
async fn flat(extra: Extra) -> String {
    format!("{extra:?}")
}

#[tokio::test]
async fn null_is_kept_in_a_flattened_map() {
    assert_eq!(
        output(
            FlatTool,
            json!({"extra": {"name": "n", "x": null, "y": "2"}})
        )
        .await,
        "Extra { name: \"n\", rest: {\"x\": None, \"y\": Some(2)} }"
    );
}

/// A pair and a list of pairs.
#[tool]
async fn pairs(pair: (i32, String), more: Option<Vec<(u8, bool)>>) -> String {
    format!("{pair:?} {more:?}")
}

#[tokio::test]
async fn tuple_positions_are_normalized() {
    assert_eq!(
        output(
            PairsTool,
            json!({"pair": ["1", 2], "more": [["3", "true"]]})
        )
        .await,
        "(1, \"2\") Some([(3, true)])"
    );
    assert_eq!(
        problems(PairsTool, json!({"pair": ["x", "a"]})).await,
        ["pair.0: expected integer; got \"x\""]
    );
    assert_eq!(
        problems(PairsTool, json!({"pair": [1, "a"], "more": [[300, true]]})).await,
        ["more.0.0: expected at most 255; got 300"]
    );
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Window {
    width: u32,
    height: u32,
    title: Option<String>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Shape {
    Point,
    Circle { radius: f64 },
    Square { side: f64 },
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    Text(String),
    Count(u8),
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
enum External {
    Stop,
    Go,
    Move { x: i32 },
    Jump(u8),
}

/// Nested values of every kind.
#[tool]
async fn draw(
    window: Option<Window>,
    shape: Option<Shape>,
    adjacent: Option<Adjacent>,
    external: Option<External>,
) -> String {
    format!("{window:?} {shape:?} {adjacent:?} {external:?}")
}

#[tokio::test]
async fn problems_inside_an_optional_struct_are_reported_inside_it() {
    assert_eq!(
        problems(DrawTool, json!({"window": {"width": "wide", "heigth": 3}})).await,
        [
            "window.height: missing required property",
            "window.width: expected integer; got \"wide\"",
            "window.heigth: unknown property (did you mean \"height\"?)",
        ]
    );
}

#[tokio::test]
async fn a_wrong_tag_lists_every_tag() {
    assert_eq!(
        problems(DrawTool, json!({"shape": {"kind": "triangle"}})).await,
        ["shape.kind: expected one of \"point\", \"circle\", \"square\"; got \"triangle\""]
    );
    assert_eq!(
        problems(DrawTool, json!({"adjacent": {"t": "Both", "c": 1}})).await,
        ["adjacent.t: expected one of \"Text\", \"Count\"; got \"Both\""]
    );
}

#[tokio::test]
async fn a_right_tag_reports_the_problems_of_its_variant() {
    assert_eq!(
        problems(
            DrawTool,
            json!({"shape": {"kind": "circle", "radius": "big"}})
        )
        .await,
        ["shape.radius: expected number; got \"big\""]
    );
    assert_eq!(
        problems(DrawTool, json!({"adjacent": {"t": "Count", "c": 300}})).await,
        ["adjacent.c: expected at most 255; got 300"]
    );
    assert_eq!(
        problems(DrawTool, json!({"external": {"Move": {"x": "left"}}})).await,
        ["external.Move.x: expected integer; got \"left\""]
    );
}

#[tokio::test]
async fn a_value_valid_in_one_variant_is_not_rewritten_for_another() {
    // `c` is a string in one variant and an integer in the other: 300 stays 300.
    assert_eq!(
        output(DrawTool, json!({"adjacent": {"t": "Count", "c": 30}})).await,
        "None None Some(Count(30)) None"
    );
    assert_eq!(
        problems(DrawTool, json!({"adjacent": {"t": "Text", "c": 5}})).await,
        ["adjacent.c: expected string; got 5"]
    );
}

#[tokio::test]
async fn a_value_of_the_wrong_kind_lists_each_form_once() {
    assert_eq!(
        problems(DrawTool, json!({"shape": "triangle"})).await,
        ["shape: expected object; got \"triangle\""]
    );
    assert_eq!(
        problems(DrawTool, json!({"external": "Fly"})).await,
        ["external: expected one of \"Stop\", \"Go\", {\"Move\": …}, {\"Jump\": …}; got \"Fly\""]
    );
    assert_eq!(
        problems(DrawTool, json!({"external": {"Fly": 1}})).await,
        [
            "external: expected one of \"Stop\", \"Go\", {\"Move\": …}, {\"Jump\": …}; got {\"Fly\":1}"
        ]
    );
}

#[tokio::test]
async fn valid_nested_values_pass() {
    assert_eq!(
        output(
            DrawTool,
            json!({"window": {"width": 1, "height": "2"}, "shape": {"kind": "square", "side": 2},
                   "adjacent": {"t": "Text", "c": "5"}, "external": {"Jump": "3"}})
        )
        .await,
        "Some(Window { width: 1, height: 2, title: None }) Some(Square { side: 2.0 }) Some(Text(\"5\")) Some(Jump(3))"
    );
}

#[derive(schemars::JsonSchema)]
struct Addresses {
    host: std::net::Ipv4Addr,
    peer: std::net::IpAddr,
    data: Value,
}

#[test]
fn only_formats_json_schema_defines_are_kept() {
    let schema = pi_tool::schema_for::<Addresses>();
    assert_eq!(
        schema["properties"]["host"],
        json!({"type": "string", "format": "ipv4"})
    );
    // schemars' `ip` is not a JSON Schema format.
    assert_eq!(schema["properties"]["peer"], json!({"type": "string"}));
    // A `format` key inside data (a `const`, an `enum`, a `default`) is not a keyword: kept.
    let with_data = pi_tool::provider_neutral(json!({
        "type": "object",
        "properties": {"x": {"const": {"format": "int32"}, "default": {"format": "uint8"}}}
    }));
    assert_eq!(
        with_data["properties"]["x"],
        json!({"const": {"format": "int32"}, "default": {"format": "uint8"}})
    );
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Action {
    Move { x: i32, y: i32 },
    Say(String),
    Stop,
}

/// Acts.
#[tool]
async fn act(action: Action) -> String {
    format!("{action:?}")
}

#[tokio::test]
async fn adjacently_tagged_content_sent_as_a_json_string_is_read_as_its_variant() {
    // The tag says `Move`, whose content is an object: the string is that object, as JSON.
    assert_eq!(
        output(
            ActTool,
            json!({"action": {"t": "Move", "c": "{\"x\":1,\"y\":2}"}})
        )
        .await,
        "Move { x: 1, y: 2 }"
    );
    // For `Say`, whose content is a string, the same text stays a string.
    assert_eq!(
        output(
            ActTool,
            json!({"action": {"t": "Say", "c": "{\"x\":1,\"y\":2}"}})
        )
        .await,
        "Say(\"{\\\"x\\\":1,\\\"y\\\":2}\")"
    );
}
