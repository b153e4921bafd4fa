//! Tools built at run time (`FnTool`, `tool_fn`): checked when built, validated exactly like a
//! `#[tool]` with the same schema, and every failure an error result.

use pi_tool::serde_json::{Map, Value, from_value, json};
use pi_tool::{
    AgentTool, ExecutionMode, FnTool, RegistryError, ToolCall, ToolError, ToolRegistry, tool,
    tool_fn,
};

/// Add two integers.
#[tool]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// Look up a word.
#[tool(deny_unknown_fields)]
async fn lookup(
    /// The word
    word: String,
    /// How many results
    limit: Option<u8>,
) -> String {
    format!("{word}:{limit:?}")
}

/// The same tool as `add`, built at run time from `#[tool]`'s own schema. Validation is the
/// shared step; after it, the closure does what `#[tool]`'s generated code does: deserialize
/// the parameters (the schema's `"format": "int64"` is not enforced, so `u64::MAX` passes
/// validation and fails here) and call the fn.
fn dynamic_add() -> FnTool {
    tool_fn(
        "add",
        "Add two integers.",
        AddTool.spec().parameters.clone(),
        |args: Value, _ctx| async move {
            let params: AddParams = from_value(args).map_err(|err| {
                ToolError::new(format!("Invalid arguments for tool \"add\": {err}"))
            })?;
            Ok::<_, ToolError>(add(params.a, params.b).await)
        },
    )
    .expect("a valid spec")
}

fn dynamic_lookup() -> FnTool {
    tool_fn(
        "lookup",
        "Look up a word.",
        LookupTool.spec().parameters.clone(),
        |args: Value, _ctx| async move {
            let word = args["word"].as_str().unwrap_or_default().to_owned();
            let limit = args.get("limit").and_then(Value::as_u64);
            format!("{word}:{:?}", limit.map(|n| n as u8))
        },
    )
    .expect("a valid spec")
}

async fn run(tool: impl AgentTool, arguments: Value) -> (bool, String) {
    let tools = ToolRegistry::new().with(tool);
    let name = tools.names().next().expect("one tool").to_owned();
    let result = tools.run(&ToolCall::new("c1", name, arguments)).await;
    (result.is_error, result.text_content())
}

#[tokio::test]
async fn a_dynamic_tool_answers_every_call_as_the_macro_tool_does() {
    let huge = "9".repeat(100_000);
    let cases = [
        json!({"a": 2, "b": 3}),
        json!({"a": "2", "b": 3.0}),
        json!({"a": 2}),
        json!({}),
        json!({"a": "two", "b": 3}),
        json!({"a": "5.5", "b": 1}),
        json!({"a": null, "b": 1}),
        json!({"a": true, "b": 1}),
        json!({"a": [1], "b": {"x": 1}}),
        json!({"a": 1, "b": 2, "extra": "ignored"}),
        json!({"a": huge, "b": 1}),
        json!([1, 2]),
        json!(42),
        json!(null),
        json!(""),
        json!("{\"a\": 1, \"b\": 2}"),
        json!("{not json"),
    ];
    let mut errors = 0;
    for arguments in cases {
        let expected = run(AddTool, arguments.clone()).await;
        let got = run(dynamic_add(), arguments.clone()).await;
        assert_eq!(got, expected, "arguments: {arguments:.200}");
        errors += usize::from(got.0);
    }
    // Both kinds were compared: four valid calls, thirteen invalid ones.
    assert_eq!(errors, 13);
}

#[tokio::test]
async fn a_dynamic_tool_with_a_closed_schema_reports_unknown_fields_as_the_macro_does() {
    let cases = [
        json!({"word": "hi"}),
        json!({"word": "hi", "limit": "3"}),
        json!({"word": "hi", "limt": 3}),
        json!({"wrd": "hi"}),
        json!({"word": "hi", "limit": 300}),
        json!({"word": "hi", "limit": null}),
    ];
    for arguments in cases {
        let expected = run(LookupTool, arguments.clone()).await;
        let got = run(dynamic_lookup(), arguments.clone()).await;
        assert_eq!(got, expected, "arguments: {arguments}");
    }
    let (is_error, text) = run(dynamic_lookup(), json!({"word": "hi", "limt": 3})).await;
    assert!(is_error);
    assert!(text.contains("limt: unknown property"), "{text}");
}

fn build_error(name: &str, description: &str, parameters: Value) -> String {
    let err = tool_fn(name, description, parameters, |_args, _ctx| async { "" })
        .expect_err("an invalid spec");
    let RegistryError::InvalidTool {
        name: named,
        reason,
    } = &err
    else {
        panic!("expected InvalidTool, got {err:?}");
    };
    assert_eq!(named, name);
    assert_eq!(
        err.to_string(),
        format!("tool `{name}` cannot be built: {reason}")
    );
    reason.clone()
}

#[test]
fn a_bad_name_or_description_is_an_error_when_built() {
    let object = json!({"type": "object"});
    for name in ["", "has space", "dot.ted", "ünïcode", &"x".repeat(65)] {
        let reason = build_error(name, "Do it.", object.clone());
        assert!(reason.contains("^[a-zA-Z0-9_-]{1,64}$"), "{name}: {reason}");
    }
    let reason = build_error("ok_name", "  \n", object.clone());
    assert!(reason.contains("description is empty"), "{reason}");
    assert!(tool_fn("A-z_09", "Do it.", object, |_a, _c| async { "" }).is_ok());
    assert!(
        tool_fn(
            "x".repeat(64),
            "Do it.",
            json!({"type": "object"}),
            |_a, _c| async { "" }
        )
        .is_ok()
    );
}

#[test]
fn a_schema_whose_root_is_not_an_object_is_an_error_when_built() {
    for parameters in [
        json!(null),
        json!(true),
        json!("object"),
        json!([{"type": "object"}]),
        json!({}),
        json!({"type": "array", "items": {}}),
        json!({"type": ["object", "null"]}),
        json!({"properties": {"a": {"type": "string"}}}),
    ] {
        let reason = build_error("t", "Do it.", parameters.clone());
        assert!(
            reason.contains("must be a JSON object with `\"type\": \"object\"` at its root"),
            "{parameters}: {reason}"
        );
    }
    let reason = build_error(
        "t",
        "Do it.",
        json!({"type": "array", "items": {"enum": ["x".repeat(500)]}}),
    );
    assert!(reason.ends_with('…'), "long schemas are cut: {reason}");
}

#[test]
fn an_invalid_json_schema_is_an_error_when_built() {
    for parameters in [
        json!({"type": "object", "properties": {"a": {"type": "strin"}}}),
        json!({"type": "object", "properties": {"a": {"minLength": -1}}}),
        json!({"type": "object", "required": "a"}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
        json!({"type": "object", "properties": {"a": {"pattern": "("}}}),
    ] {
        let reason = build_error("t", "Do it.", parameters.clone());
        assert!(
            reason.starts_with("the parameters schema is not valid JSON Schema: "),
            "{parameters}: {reason}"
        );
    }
}

#[tokio::test]
async fn label_execution_mode_and_prepare_arguments_are_set_by_the_builder() {
    let plain = dynamic_add();
    assert_eq!(plain.label(), "add");
    assert_eq!(plain.execution_mode(), None);
    assert!(!plain.rewrites_arguments());

    // An old argument shape (`x`, `y`) rewritten before validation.
    let tool = FnTool::builder(
        "add",
        "Add two integers.",
        AddTool.spec().parameters.clone(),
    )
    .label("Adder")
    .sequential()
    .prepare_arguments(|mut args: Value| {
        if let Some(object) = args.as_object_mut() {
            if let Some(x) = object.remove("x") {
                object.insert("a".into(), x);
            }
            if let Some(y) = object.remove("y") {
                object.insert("b".into(), y);
            }
            if object.contains_key("boom") {
                panic!("the shim panicked");
            }
            if object.contains_key("refuse") {
                return Err(ToolError::new("refused by the shim"));
            }
        }
        Ok(args)
    })
    .build(|args: Value, _ctx| async move {
        format!(
            "{}",
            args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)
        )
    })
    .expect("a valid spec");
    assert_eq!(tool.label(), "Adder");
    assert_eq!(tool.execution_mode(), Some(ExecutionMode::Sequential));
    assert!(tool.rewrites_arguments());
    assert_eq!(tool.spec().name, "add");
    assert_eq!(tool.spec().parameters, AddTool.spec().parameters);

    assert_eq!(
        run(tool.clone(), json!({"x": 2, "y": "3"})).await,
        (false, "5".to_owned())
    );
    assert_eq!(
        run(tool.clone(), json!({"refuse": 1})).await,
        (true, "refused by the shim".to_owned())
    );
    assert_eq!(
        run(tool.clone(), json!({"boom": 1})).await,
        (
            true,
            "Tool add panicked while preparing arguments: the shim panicked".to_owned()
        )
    );
    // Validation still runs after the shim.
    let (is_error, text) = run(tool, json!({"x": 2})).await;
    assert!(is_error);
    assert!(text.contains("b: missing required property"), "{text}");

    let parallel = FnTool::builder("p", "P.", json!({"type": "object"}))
        .execution_mode(ExecutionMode::Parallel)
        .build(|_args, _ctx| async { "" })
        .expect("valid");
    assert_eq!(parallel.execution_mode(), Some(ExecutionMode::Parallel));
}

#[tokio::test]
async fn the_closure_gets_the_context_and_its_failures_are_error_results() {
    let tool = tool_fn(
        "act",
        "Act.",
        json!({"type": "object", "properties": {"how": {"type": "string"}}, "required": ["how"]}),
        |args: Value, ctx| async move {
            match args["how"].as_str() {
                Some("id") => Ok(ctx.tool_call_id().to_owned()),
                Some("fail") => Err(ToolError::new("it failed")),
                _ => panic!("the closure panicked"),
            }
        },
    )
    .expect("a valid spec");
    assert_eq!(
        run(tool.clone(), json!({"how": "id"})).await,
        (false, "c1".to_owned())
    );
    assert_eq!(
        run(tool.clone(), json!({"how": "fail"})).await,
        (true, "it failed".to_owned())
    );
    assert_eq!(
        run(tool, json!({"how": "panic"})).await,
        (true, "Tool act panicked: the closure panicked".to_owned())
    );
}

#[test]
fn the_validator_is_compiled_once_and_shared_by_clones() {
    let tool = dynamic_add();
    let copy = tool.clone();
    let first = tool.validator().expect("compiled at build time");
    assert!(std::ptr::eq(first, tool.validator().expect("the same")));
    assert!(std::ptr::eq(first, copy.validator().expect("shared")));
}

#[tokio::test]
async fn every_pair_of_hostile_values_gets_the_macro_tools_answer() {
    // Each argument absent or one of these: numbers at and past i64's edges, numeric and
    // non-numeric strings, JSON in strings, every JSON type.
    let values = [
        None,
        Some(json!(0)),
        Some(json!(-7)),
        Some(json!(2.0)),
        Some(json!(2.5)),
        Some(json!(i64::MAX)),
        Some(json!(u64::MAX)),
        Some(json!(1e300)),
        Some(json!("3")),
        Some(json!(" 3 ")),
        Some(json!("3.0")),
        Some(json!("9223372036854775808")),
        Some(json!("x")),
        Some(json!("")),
        Some(json!("[1]")),
        Some(json!(null)),
        Some(json!(true)),
        Some(json!([])),
        Some(json!({"a": 1})),
    ];
    let (mut compared, mut errors) = (0, 0);
    for a in &values {
        for b in &values {
            let mut arguments = Map::new();
            if let Some(a) = a {
                arguments.insert("a".into(), a.clone());
            }
            if let Some(b) = b {
                arguments.insert("b".into(), b.clone());
            }
            let arguments = Value::Object(arguments);
            let expected = run(AddTool, arguments.clone()).await;
            let got = run(dynamic_add(), arguments.clone()).await;
            assert_eq!(got, expected, "arguments: {arguments}");
            compared += 1;
            errors += usize::from(got.0);
        }
    }
    assert_eq!(compared, 19 * 19);
    assert!(errors > 0 && errors < compared, "{errors} of {compared}");
}

/// A schema from elsewhere whose `$ref`s chain ten thousand definitions deep is refused when
/// the tool is built, before anything compiles it (compiling would overflow the stack).
#[test]
fn a_schema_with_a_chain_of_ten_thousand_references_is_refused_when_built() {
    let mut defs = Map::new();
    for i in 0..10_000 {
        defs.insert(
            format!("D{i}"),
            json!({"$ref": format!("#/$defs/D{}", i + 1)}),
        );
    }
    defs.insert("D10000".to_owned(), json!({"type": "string"}));
    let parameters = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/D0"}},
        "$defs": defs
    });
    // On a 2 MiB stack, as on a test or tokio worker thread.
    let reason = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || build_error("remote", "A tool from a server.", parameters))
        .expect("a thread")
        .join()
        .expect("no overflow");
    assert!(
        reason.starts_with("the parameters schema cannot be compiled: its references nest")
            && reason.ends_with("more than the 512 levels a schema may reach"),
        "{reason}"
    );
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Reading {
    room: String,
    celsius: f64,
}

/// Read a room's temperature.
#[tool(
    label = "Thermometer",
    sequential,
    deny_unknown_fields,
    timeout = "2s",
    blocking,
    defer,
    callers = "model",
    replay = "never",
    aborted = "Thermometer stopped",
    read_only,
    idempotent,
    open_world = false
)]
fn thermometer(room: String) -> pi_tool::Json<Reading> {
    pi_tool::Json(Reading {
        room,
        celsius: 21.5,
    })
}

#[tokio::test]
async fn the_builder_says_everything_the_attribute_says() {
    let attribute = ThermometerTool;
    // The attribute's schema without its `additionalProperties: false`: the builder adds it.
    let mut parameters = attribute.spec().parameters.clone();
    parameters
        .as_object_mut()
        .expect("an object schema")
        .shift_remove("additionalProperties");
    let built = FnTool::builder(
        "thermometer",
        attribute.spec().description.clone(),
        parameters,
    )
    .label("Thermometer")
    .sequential()
    .deny_unknown_fields()
    .timeout(std::time::Duration::from_secs(2))
    .blocking()
    .deferred()
    .callers(pi_tool::ToolCallers::Model)
    .replay(pi_tool::Replay::Never)
    .aborted_message("Thermometer stopped")
    .annotations(
        pi_tool::ToolAnnotations::new()
            .read_only(true)
            .idempotent(true)
            .open_world(false),
    )
    .output_schema_for::<Reading>()
    .build(|args: Value, _ctx| async move {
        pi_tool::Json(Reading {
            room: args["room"].as_str().unwrap_or_default().to_owned(),
            celsius: 21.5,
        })
    })
    .expect("a valid tool");
    assert_eq!(built.spec(), attribute.spec());
    assert_eq!(built.label(), attribute.label());
    assert_eq!(built.execution_mode(), attribute.execution_mode());
    assert_eq!(built.execution_mode(), Some(ExecutionMode::Sequential));
    assert_eq!(built.timeout(), attribute.timeout());
    assert_eq!(built.blocking(), attribute.blocking());
    assert!(built.blocking());
    assert_eq!(built.deferred(), attribute.deferred());
    assert!(built.deferred());
    assert_eq!(built.callers(), attribute.callers());
    assert_eq!(built.callers(), pi_tool::ToolCallers::Model);
    assert_eq!(built.replay(), attribute.replay());
    assert_eq!(built.replay(), Some(pi_tool::Replay::Never));
    assert_eq!(built.aborted_message(), attribute.aborted_message());
    assert_eq!(built.aborted_message(), "Thermometer stopped");
    assert_eq!(built.annotations(), attribute.annotations());
    assert_eq!(built.output_schema(), attribute.output_schema());
    assert!(built.output_schema().is_some());

    // And they run alike: the same result and details, the same refusal of an unknown field.
    let tools = ToolRegistry::new().with(built);
    let by_attribute = ToolRegistry::new().with(ThermometerTool);
    for arguments in [json!({"room": "hall"}), json!({"room": "hall", "rom": 1})] {
        let call = ToolCall::new("c1", "thermometer", arguments);
        let (a, b) = (tools.run(&call).await, by_attribute.run(&call).await);
        assert_eq!(
            (a.is_error, a.text_content(), a.details),
            (b.is_error, b.text_content(), b.details)
        );
    }
    // A call aborted before it runs is answered with the tool's own text.
    let call = ToolCall::new("c2", "thermometer", json!({"room": "hall"}));
    for registry in [&tools, &by_attribute] {
        let signal = pi_tool::CancellationToken::new();
        signal.cancel();
        let ctx = registry.context("c2").with_signal(signal);
        let result = registry.run_with(&call, ctx).await;
        assert!(result.is_error);
        assert_eq!(result.text_content(), "Thermometer stopped");
    }
    let unknown = tools
        .run(&ToolCall::new(
            "c2",
            "thermometer",
            json!({"room": "hall", "rom": 1}),
        ))
        .await;
    assert!(
        unknown
            .text_content()
            .contains("rom: unknown property (did you mean \"room\"?)"),
        "{}",
        unknown.text_content()
    );
}

#[test]
fn an_invalid_output_schema_is_an_error_when_built() {
    let err = FnTool::builder("t", "T.", json!({"type": "object"}))
        .output_schema(json!({"type": 5}))
        .build(|_args, _ctx| async { "" })
        .expect_err("an invalid output schema");
    let text = err.to_string();
    assert!(
        text.contains("the output schema is not valid JSON Schema"),
        "{text}"
    );
    // The parallel mode is the attribute's `parallel`.
    let parallel = FnTool::builder("t", "T.", json!({"type": "object"}))
        .parallel()
        .build(|_args, _ctx| async { "" })
        .expect("a valid tool");
    assert_eq!(parallel.execution_mode(), Some(ExecutionMode::Parallel));
}
