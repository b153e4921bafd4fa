//! Our schemas checked by a validator we did not write: AJV 8 (the validator pi and the MCP
//! TypeScript SDK use), `Ajv2020` in strict mode with the standard formats. Every schema of a
//! broad set of tools (every parameter shape) must compile, and AJV must agree with our
//! validator on sample arguments: what we accept (after normalization) AJV accepts, what we
//! refuse AJV refuses. Among the accepted, the samples our quick walk takes as they are
//! (`ArgumentValidator::accepts_as_is`) go to AJV unchanged.
//!
//! Needs Node and AJV from `.ci/install-test-deps` (folder: env `PI_TEST_DEPS`, default
//! `$HOME/.cache/pi-tool-test-deps`). Without them the test is skipped, or fails when env `CI`
//! is set.

// Only the tools' schemas matter here: their parameters and types' fields are never read, and
// a tool with many parameters is the point.
#![allow(dead_code, unused_variables, clippy::too_many_arguments)]

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::num::{NonZeroI64, NonZeroU16};
use std::path::PathBuf;
use std::process::Command;

use pi_tool::{AgentTool, ToolSpec, tool};
use serde_json::{Value, json};

/// Every integer width and both floats.
#[tool]
async fn numbers(
    a8: Option<i8>,
    a32: Option<i32>,
    a64: Option<i64>,
    a128: Option<i128>,
    b16: Option<u16>,
    b64: Option<u64>,
    bsize: Option<usize>,
    nz: Option<NonZeroI64>,
    nzu: Option<NonZeroU16>,
    f: Option<f32>,
    d: Option<f64>,
    #[schemars(range(min = 1, max = 7))] days: Option<u8>,
) -> String {
    String::new()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Shape {
    Point,
    Circle { radius: f64 },
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    Text(String),
    Count(u8),
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
enum External {
    Stop,
    Move { x: i32 },
    Jump(u8),
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Amount {
    Exact(i64),
    Words(String),
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Enums of every tagging.
#[tool]
async fn enums(
    shape: Shape,
    adjacent: Option<Adjacent>,
    external: Option<External>,
    amount: Option<Amount>,
    unit: Option<Unit>,
) -> String {
    String::new()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Window {
    width: u32,
    #[serde(rename = "heightPx")]
    height: u32,
    title: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Labelled {
    name: String,
    #[serde(flatten)]
    rest: BTreeMap<String, Option<i32>>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Tree {
    note: String,
    children: Vec<Tree>,
}

/// Containers: structs, maps, tuples, flatten, recursion, free-form values, formats.
#[tool]
async fn containers(
    window: Option<Window>,
    env: Option<HashMap<String, Option<String>>>,
    pair: Option<(i32, String)>,
    points: Option<Vec<(u8, u8)>>,
    labelled: Option<Labelled>,
    tree: Option<Tree>,
    data: Option<Value>,
    host: Option<Ipv4Addr>,
    peer: Option<IpAddr>,
    letter: Option<char>,
    path: Option<PathBuf>,
) -> String {
    String::new()
}

fn cases() -> Vec<(ToolSpec, Vec<Value>)> {
    vec![
        (
            NumbersTool.spec().clone(),
            vec![
                json!({}),
                json!({"a8": 127, "a32": -2_147_483_648i64, "a64": i64::MAX, "b64": u64::MAX}),
                json!({"a8": 128}),
                json!({"a32": 2_147_483_648u64}),
                json!({"a64": 9_223_372_036_854_775_808u64}),
                json!({"a64": 1e19}),
                json!({"a128": 1e20}),
                json!({"b16": 65536}),
                json!({"b64": -1}),
                json!({"bsize": 1.5}),
                json!({"nz": 0}),
                json!({"nz": -3}),
                json!({"nzu": 0}),
                json!({"f": 3.5e38}),
                json!({"f": 1.5, "d": 1e308}),
                json!({"days": 8}),
                json!({"days": 7}),
                json!({"a32": "12"}),
                json!({"a32": "twelve"}),
                json!({"a8": null}),
            ],
        ),
        (
            EnumsTool.spec().clone(),
            vec![
                json!({"shape": {"kind": "point"}}),
                json!({"shape": {"kind": "circle", "radius": 2}}),
                json!({"shape": {"kind": "circle"}}),
                json!({"shape": {"kind": "triangle"}}),
                json!({"shape": "point"}),
                json!({"shape": {"kind": "point"}, "adjacent": {"t": "Count", "c": 3}}),
                json!({"shape": {"kind": "point"}, "adjacent": {"t": "Count", "c": 300}}),
                json!({"shape": {"kind": "point"}, "adjacent": {"t": "Both", "c": 3}}),
                json!({"shape": {"kind": "point"}, "external": "Stop"}),
                json!({"shape": {"kind": "point"}, "external": {"Move": {"x": 1}}}),
                json!({"shape": {"kind": "point"}, "external": {"Fly": 1}}),
                json!({"shape": {"kind": "point"}, "external": {"Jump": 256}}),
                json!({"shape": {"kind": "point"}, "amount": 5}),
                json!({"shape": {"kind": "point"}, "amount": "five"}),
                json!({"shape": {"kind": "point"}, "amount": 1e19}),
                json!({"shape": {"kind": "point"}, "unit": "celsius"}),
                json!({"shape": {"kind": "point"}, "unit": "kelvin"}),
            ],
        ),
        (
            ContainersTool.spec().clone(),
            vec![
                json!({}),
                json!({"window": {"width": 1, "heightPx": 2}}),
                json!({"window": {"width": 1, "height": 2}}),
                json!({"window": {"width": -1, "heightPx": 2, "title": "t"}}),
                json!({"env": {"A": "1", "B": null}}),
                json!({"env": {"A": 1}}),
                json!({"pair": [1, "a"]}),
                json!({"pair": ["1", "a"]}),
                json!({"pair": [1]}),
                json!({"pair": [1, "a", 3]}),
                json!({"points": [[1, 2], [3, 4]]}),
                json!({"points": [[1, 256]]}),
                json!({"labelled": {"name": "n", "x": 1, "y": null}}),
                json!({"labelled": {"name": "n", "x": "one"}}),
                json!({"tree": {"note": "a", "children": [{"note": "b", "children": []}]}}),
                json!({"tree": {"note": "a", "children": [{"note": 5}]}}),
                json!({"data": {"anything": [null, 1, "x"]}}),
                json!({"host": "127.0.0.1", "peer": "::1"}),
                json!({"letter": "ab"}),
                json!({"letter": "a", "path": "/tmp"}),
            ],
        ),
    ]
}

/// Compiles each schema and validates each instance; prints one JSON line per schema:
/// `{"error": "..."}` or `{"valid": [true, false, ...]}`.
const SCRIPT: &str = r#"
const path = require("path");
const fs = require("fs");
const modules = path.join(process.env.PI_TEST_DEPS, "node_modules");
const Ajv2020 = require(path.join(modules, "ajv/dist/2020")).default;
const addFormats = require(path.join(modules, "ajv-formats")).default;
const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = cases.map(({ schema, instances }) => {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
  addFormats(ajv);
  try {
    const validate = ajv.compile(schema);
    return { valid: instances.map((instance) => validate(instance)) };
  } catch (error) {
    return { error: String(error.message || error) };
  }
});
process.stdout.write(JSON.stringify(out));
"#;

/// JavaScript numbers are doubles: AJV sees `2^63` for both `i64::MAX` and `i64::MAX + 1`, so
/// it cannot judge integers beyond `2^53` exactly (ours does: `tests/borders.rs`).
fn beyond_js_precision(value: &Value) -> bool {
    const EXACT: u64 = 1 << 53;
    match value {
        Value::Number(n) => {
            n.as_u64().is_some_and(|u| u > EXACT)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() > EXACT)
        }
        Value::Array(items) => items.iter().any(beyond_js_precision),
        Value::Object(map) => map.values().any(beyond_js_precision),
        _ => false,
    }
}

fn test_deps() -> Option<PathBuf> {
    let folder = match std::env::var_os("PI_TEST_DEPS") {
        Some(folder) => PathBuf::from(folder),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/pi-tool-test-deps"),
    };
    let present = folder.join("node22").exists() && folder.join("node_modules/ajv").exists();
    if present {
        return Some(folder);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "AJV is missing from {}: run .ci/install-test-deps",
        folder.display()
    );
    eprintln!(
        "skipped: AJV is missing from {} (run .ci/install-test-deps)",
        folder.display()
    );
    None
}

#[test]
fn ajv_strict_compiles_every_schema_and_agrees_with_our_validator() {
    let Some(deps) = test_deps() else {
        return;
    };
    // What AJV checks for each sample: the normalized arguments when we accept (they must be
    // valid as they are), the arguments as sent when we refuse (AJV does not coerce, so it
    // must refuse them too).
    let mut payload = Vec::new();
    let mut expected = Vec::new();
    // Samples the quick walk takes as they are: AJV judges exactly those (nothing normalized).
    let mut taken_as_is = 0;
    for (spec, samples) in cases() {
        let validator = pi_tool::ArgumentValidator::new(&spec);
        let mut instances = Vec::new();
        let mut verdicts = Vec::new();
        for sample in samples {
            if validator.accepts_as_is(&sample, &pi_tool::ArgumentLimits::DEFAULT) {
                taken_as_is += 1;
                assert_eq!(
                    validator.validate(sample.clone()).ok(),
                    Some(sample.clone())
                );
            }
            match validator.validate(sample.clone()) {
                Ok(normalized) => {
                    instances.push(normalized);
                    verdicts.push((true, sample));
                }
                Err(_) => {
                    instances.push(sample.clone());
                    verdicts.push((false, sample));
                }
            }
        }
        payload.push(json!({"schema": spec.parameters, "instances": instances}));
        expected.push((spec.name, verdicts));
    }
    let dir = std::env::temp_dir().join(format!("pi-tool-ajv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cases_file = dir.join("cases.json");
    let script_file = dir.join("check.js");
    std::fs::write(&cases_file, serde_json::to_vec(&payload).expect("json")).expect("write");
    std::fs::write(&script_file, SCRIPT).expect("write");
    let run = Command::new(deps.join("node22"))
        .arg(&script_file)
        .arg(&cases_file)
        .env("PI_TEST_DEPS", &deps)
        .output()
        .expect("node runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        run.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&run.stdout).expect("node prints JSON");
    let mut disagreements = Vec::new();
    for ((name, verdicts), result) in expected.iter().zip(&results) {
        if let Some(error) = result.get("error") {
            disagreements.push(format!("{name}: AJV strict refuses the schema: {error}"));
            continue;
        }
        for ((ours, sample), theirs) in verdicts
            .iter()
            .zip(result["valid"].as_array().expect("list"))
        {
            if Some(*ours) != theirs.as_bool() && !beyond_js_precision(sample) {
                disagreements.push(format!(
                    "{name}: {sample}: ours {}, AJV {theirs}",
                    if *ours { "accepts" } else { "refuses" }
                ));
            }
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    // The samples cover both verdicts.
    let accepted = expected
        .iter()
        .flat_map(|(_, v)| v)
        .filter(|(ok, _)| *ok)
        .count();
    let refused = expected
        .iter()
        .flat_map(|(_, v)| v)
        .filter(|(ok, _)| !*ok)
        .count();
    assert!(
        accepted >= 20 && refused >= 20,
        "{accepted} accepted, {refused} refused"
    );
    assert!(
        taken_as_is >= 10,
        "{taken_as_is} samples taken by the quick walk"
    );
}
