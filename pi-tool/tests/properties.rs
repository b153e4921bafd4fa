//! Property tests of the validation contract, over a parameter type holding every shape users
//! write (all integer widths, floats, `NonZero`, `Option`, `Vec`, maps, tuples, enums of every
//! tagging, flatten, rename, `Value`):
//!
//! 1. any instance, serialized to JSON, validates unchanged and deserializes back to itself;
//! 2. any JSON (an instance with one value replaced by a hostile one) is refused by validation
//!    with our message, or deserializes: it never validates and then fails in serde;
//! 3. what normalization changes, it changes without losing information.

use std::collections::BTreeMap;
use std::num::{NonZeroI32, NonZeroU64};

use pi_tool::{ArgumentValidator, ToolSpec};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value, json};

#[derive(Serialize, Deserialize, schemars::JsonSchema, PartialEq, Debug, Clone)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Tagged {
    Point,
    Circle { radius: f64 },
    Named { name: String, size: Option<u8> },
}

#[derive(Serialize, Deserialize, schemars::JsonSchema, PartialEq, Debug, Clone)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    Text(String),
    Count(u8),
    Pair(i16, bool),
}

#[derive(Serialize, Deserialize, schemars::JsonSchema, PartialEq, Debug, Clone)]
enum External {
    Stop,
    Move { x: i32, y: i32 },
    Jump(u16),
}

#[derive(Serialize, Deserialize, schemars::JsonSchema, PartialEq, Debug, Clone)]
#[serde(untagged)]
enum Untagged {
    Number(i64),
    Words(String),
    Flag(bool),
}

#[derive(Serialize, Deserialize, schemars::JsonSchema, PartialEq, Debug, Clone)]
struct Flat {
    #[serde(rename = "flatCount")]
    flat_count: u32,
    flat_note: Option<String>,
}

#[derive(Serialize, Deserialize, schemars::JsonSchema, PartialEq, Debug, Clone)]
struct Everything {
    a8: i8,
    a16: i16,
    a32: i32,
    a64: i64,
    a128: i128,
    asize: isize,
    b8: u8,
    b16: u16,
    b32: u32,
    b64: u64,
    b128: u128,
    bsize: usize,
    nz: NonZeroI32,
    nzu: NonZeroU64,
    f: f32,
    d: f64,
    opt: Option<u16>,
    list: Vec<i32>,
    env: BTreeMap<String, Option<String>>,
    pair: (i32, String, bool),
    tagged: Tagged,
    adjacent: Adjacent,
    external: External,
    untagged: Untagged,
    #[serde(rename = "renamedField")]
    renamed: String,
    #[serde(flatten)]
    flat: Flat,
    value: Value,
}

fn validator() -> &'static ArgumentValidator {
    static VALIDATOR: std::sync::OnceLock<ArgumentValidator> = std::sync::OnceLock::new();
    VALIDATOR.get_or_init(|| {
        ArgumentValidator::new(&ToolSpec {
            name: "everything".into(),
            description: "Every parameter shape.".into(),
            parameters: pi_tool::schema_for::<Everything>(),
        })
    })
}

fn finite_f64() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |f| f.is_finite())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        finite_f64().prop_map(Value::from),
        "\\PC{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,4}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

prop_compose! {
    fn everything()(
        ints in (any::<i8>(), any::<i16>(), any::<i32>(), any::<i64>(), i128::from(i64::MIN)..=i128::from(u64::MAX), any::<isize>()),
        uints in (any::<u8>(), any::<u16>(), any::<u32>(), any::<u64>(), 0..=u128::from(u64::MAX), any::<usize>()),
        nonzero in (
            any::<i32>().prop_filter_map("not zero", NonZeroI32::new),
            any::<u64>().prop_filter_map("not zero", NonZeroU64::new),
        ),
        floats in (any::<f32>().prop_filter("finite", |f| f.is_finite()), finite_f64()),
        opt in any::<Option<u16>>(),
        list in prop::collection::vec(any::<i32>(), 0..4),
        env in prop::collection::btree_map("\\PC{0,5}", any::<Option<String>>(), 0..4),
        pair in (any::<i32>(), "\\PC{0,5}", any::<bool>()),
        tagged in prop_oneof![
            Just(Tagged::Point),
            finite_f64().prop_map(|radius| Tagged::Circle { radius }),
            ("\\PC{0,5}", any::<Option<u8>>()).prop_map(|(name, size)| Tagged::Named { name, size }),
        ],
        adjacent in prop_oneof![
            "\\PC{0,5}".prop_map(Adjacent::Text),
            any::<u8>().prop_map(Adjacent::Count),
            (any::<i16>(), any::<bool>()).prop_map(|(a, b)| Adjacent::Pair(a, b)),
        ],
        external in prop_oneof![
            Just(External::Stop),
            (any::<i32>(), any::<i32>()).prop_map(|(x, y)| External::Move { x, y }),
            any::<u16>().prop_map(External::Jump),
        ],
        untagged in prop_oneof![
            any::<i64>().prop_map(Untagged::Number),
            "\\PC{0,5}".prop_map(Untagged::Words),
            any::<bool>().prop_map(Untagged::Flag),
        ],
        renamed in "\\PC{0,5}",
        flat in (any::<u32>(), any::<Option<String>>()),
        value in json_value(),
    ) -> Everything {
        Everything {
            a8: ints.0, a16: ints.1, a32: ints.2, a64: ints.3, a128: ints.4, asize: ints.5,
            b8: uints.0, b16: uints.1, b32: uints.2, b64: uints.3, b128: uints.4, bsize: uints.5,
            nz: nonzero.0, nzu: nonzero.1, f: floats.0, d: floats.1,
            opt, list, env, pair, tagged, adjacent, external, untagged, renamed,
            flat: Flat { flat_count: flat.0, flat_note: flat.1 },
            value,
        }
    }
}

/// Values a model sends that sit at or past the borders of the types: limits and one past
/// them, huge and tiny floats, numeric strings exact and not, booleans as text, JSON in a
/// string, nulls.
fn hostile() -> impl Strategy<Value = Value> {
    let numbers: Vec<Value> = vec![
        json!(0),
        json!(-1),
        json!(127),
        json!(128),
        json!(-129),
        json!(255),
        json!(256),
        json!(32768),
        json!(65535),
        json!(65536),
        json!(2_147_483_648u64),
        json!(4_294_967_296u64),
        json!(9_007_199_254_740_993u64),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(9_223_372_036_854_775_808u64),
        json!(u64::MAX),
        json!(5.0),
        json!(5.5),
        json!(1e19),
        json!(1e20),
        json!(1e300),
        json!(-1e300),
        json!(3.5e38),
        json!(3.4e38),
        json!(1e-300),
    ];
    let strings: Vec<&str> = vec![
        "5",
        " 7 ",
        "-3",
        "5.0",
        "5.5",
        "5.0000000000000001",
        "3.14159265358979323846",
        "9007199254740993.0",
        "1e3",
        "1e-400",
        "1e400",
        "18446744073709551616",
        "0.1",
        "true",
        "False",
        "yes",
        "null",
        "",
        "[1, 2]",
        "[\"1\", true]",
        "{\"x\": 1}",
        "{\"kind\": \"point\"}",
        "point",
        "Stop",
    ];
    prop_oneof![
        prop::sample::select(numbers),
        prop::sample::select(strings).prop_map(Value::from),
        json_value(),
    ]
}

/// Every place in `value` a mutation can replace: object members and array items.
fn places(value: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                at.push(key.clone());
                out.push(at.clone());
                places(child, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                at.push(i.to_string());
                out.push(at.clone());
                places(child, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn replace(value: &mut Value, path: &[String], new: Value) {
    let Some((last, parents)) = path.split_last() else {
        *value = new;
        return;
    };
    let mut node = value;
    for segment in parents {
        node = match node {
            Value::Object(map) => map.get_mut(segment).expect("path exists"),
            Value::Array(items) => &mut items[segment.parse::<usize>().expect("index")],
            _ => unreachable!("places only lists containers' children"),
        };
    }
    match node {
        Value::Object(map) => {
            map.insert(last.clone(), new);
        }
        Value::Array(items) => items[last.parse::<usize>().expect("index")] = new,
        _ => unreachable!("places only lists containers' children"),
    }
}

/// `±digits × 10^exponent` without leading or trailing zeros: equal decimals, equal forms.
fn decimal_form(text: &str) -> Option<(bool, String, i64)> {
    let text = text.trim();
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !(int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())) || int.len() + frac.len() == 0
    {
        return None;
    }
    let digits = format!("{int}{frac}");
    let mut exponent = exponent - frac.len() as i64;
    let digits = digits.trim_start_matches('0');
    let trimmed = digits.trim_end_matches('0');
    exponent += (digits.len() - trimmed.len()) as i64;
    if trimmed.is_empty() {
        return Some((false, String::new(), 0));
    }
    Some((negative, trimmed.to_owned(), exponent))
}

/// The decimal a JSON number stands for, exactly (an `f64` is printed in full).
fn number_form(number: &Number) -> Option<(bool, String, i64)> {
    match (number.as_i64(), number.as_u64(), number.as_f64()) {
        (Some(i), _, _) => decimal_form(&i.to_string()),
        (_, Some(u), _) => decimal_form(&u.to_string()),
        (_, _, Some(f)) => decimal_form(&format!("{f:e}")),
        _ => None,
    }
}

/// Whether `normalized` says what `sent` said: each difference is one of the documented
/// rewrites and keeps the value.
fn lossless(sent: &Value, normalized: &Value) -> bool {
    if sent == normalized {
        return true;
    }
    match (sent, normalized) {
        (Value::Object(a), Value::Object(b)) => {
            b.keys().all(|key| a.contains_key(key))
                && a.iter().all(|(key, value)| match b.get(key) {
                    Some(new) => lossless(value, new),
                    // Only `null` may be dropped (an optional property left out).
                    None => value.is_null(),
                })
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| lossless(x, y))
        }
        (Value::String(s), Value::Number(n)) => {
            decimal_form(s).is_some()
                && (decimal_form(s) == number_form(n) || same_float_as_the_literal(s.trim(), n))
        }
        (Value::Number(float), Value::Number(int)) => {
            float.is_f64() && number_form(float) == number_form(int)
        }
        (Value::String(s), Value::Bool(b)) => s.trim().eq_ignore_ascii_case(&b.to_string()),
        (Value::Number(n), Value::String(s)) => *s == n.to_string(),
        (Value::Bool(b), Value::String(s)) => *s == b.to_string(),
        (Value::String(s), parsed @ (Value::Object(_) | Value::Array(_))) => {
            serde_json::from_str::<Value>(s).is_ok_and(|value| lossless(&value, parsed))
        }
        _ => false,
    }
}

/// Whether `number` is the float serde_json reads for `text` as a JSON number (a float with
/// more digits than an `f64` holds is rounded, as the literal is), and not 0 for a non-zero
/// decimal.
fn same_float_as_the_literal(text: &str, number: &Number) -> bool {
    let Some(float) = number.as_f64().filter(|_| number.is_f64()) else {
        return false;
    };
    let read = serde_json::from_str::<f64>(text)
        .ok()
        .or_else(|| text.parse().ok());
    read == Some(float)
        && (float != 0.0 || decimal_form(text).is_some_and(|(_, d, _)| d.is_empty()))
}

/// `normalized` is `sent`, except that a `null` may be left out (an optional property: the
/// one rewrite a valid value gets).
fn unchanged_but_absent_nulls(sent: &Value, normalized: &Value) -> bool {
    match (sent, normalized) {
        (Value::Object(a), Value::Object(b)) => {
            b.keys().all(|key| a.contains_key(key))
                && a.iter().all(|(key, value)| match b.get(key) {
                    Some(new) => unchanged_but_absent_nulls(value, new),
                    None => value.is_null(),
                })
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| unchanged_but_absent_nulls(x, y))
        }
        _ => sent == normalized,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_instance_validates_unchanged_and_round_trips(instance in everything()) {
        let sent = serde_json::to_value(&instance).expect("serializes");
        let normalized = validator().validate(sent.clone());
        prop_assert!(normalized.is_ok(), "{}", normalized.unwrap_err());
        let normalized = normalized.expect("checked");
        prop_assert!(
            unchanged_but_absent_nulls(&sent, &normalized),
            "normalization changed a valid value: {sent} -> {normalized}"
        );
        // Inside a map or a free-form value, `null` is data: nothing may be left out there.
        prop_assert_eq!(&normalized["env"], &sent["env"]);
        prop_assert_eq!(&normalized["value"], &sent["value"]);
        let back: Everything = serde_json::from_value(normalized).expect("deserializes");
        prop_assert_eq!(back, instance);
    }

    #[test]
    fn any_json_is_refused_by_validation_or_deserializes(
        instance in everything(),
        place in any::<prop::sample::Index>(),
        new in hostile(),
    ) {
        let mut sent = serde_json::to_value(&instance).expect("serializes");
        let mut all = Vec::new();
        places(&sent, &mut Vec::new(), &mut all);
        replace(&mut sent, &all[place.index(all.len())], new);
        match validator().validate(sent.clone()) {
            Ok(normalized) => {
                prop_assert!(lossless(&sent, &normalized), "lost information: {sent} -> {normalized}");
                let parsed = serde_json::from_value::<Everything>(normalized.clone());
                prop_assert!(parsed.is_ok(), "validated, then serde failed: {}\n{normalized}", parsed.unwrap_err());
            }
            Err(error) => {
                let text = error.to_string();
                prop_assert!(text.starts_with("Validation failed for tool \"everything\":\n  - "), "{text}");
            }
        }
    }
}
