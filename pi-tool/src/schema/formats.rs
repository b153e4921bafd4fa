//! schemars marks Rust's numeric types with `format` values JSON Schema does not define
//! (`int32`, `uint8`, `double`, ...). Strict validators (AJV, MCP clients) refuse to compile a
//! schema with an unknown format, and the format carries no bounds, so a validator would let
//! `2147483648` through for an `i32`. This rewrite replaces each such format with the
//! `minimum`/`maximum` the type can hold and keeps only the formats the spec defines.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// The formats JSON Schema draft 2020-12 defines (§7.3); any other is dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose values are data, not schemas: never rewritten.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];

/// The inclusive range a schemars numeric format stands for, as JSON numbers.
///
/// `serde_json::Value` holds integers as `i64` or `u64` only (this crate does not enable
/// `arbitrary_precision`), so `i128`/`u128` parameters can receive no more than that: their
/// bounds are what reaches them, not what they could hold.
fn format_bounds(format: &str) -> Option<(Number, Number)> {
    let signed = |min: i64, max: i64| Some((Number::from(min), Number::from(max)));
    let unsigned = |max: u64| Some((Number::from(0u64), Number::from(max)));
    match format {
        "int8" => signed(i8::MIN.into(), i8::MAX.into()),
        "int16" => signed(i16::MIN.into(), i16::MAX.into()),
        "int32" => signed(i32::MIN.into(), i32::MAX.into()),
        "int64" => signed(i64::MIN, i64::MAX),
        "int" => signed(isize::MIN as i64, isize::MAX as i64),
        "int128" => Some((Number::from(i64::MIN), Number::from(u64::MAX))),
        "uint8" => unsigned(u8::MAX.into()),
        "uint16" => unsigned(u16::MAX.into()),
        "uint32" => unsigned(u32::MAX.into()),
        "uint64" | "uint128" => unsigned(u64::MAX),
        "uint" => unsigned(usize::MAX as u64),
        // Beyond these an `f32` parameter receives infinity.
        "float" => Some((
            Number::from_f64(f64::from(f32::MIN))?,
            Number::from_f64(f64::from(f32::MAX))?,
        )),
        _ => None,
    }
}

/// Rewrites every schema node below `value` (see the module docs).
pub(crate) fn standardize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format")
                && !STANDARD_FORMATS.contains(&format.as_str())
            {
                let bounds = format_bounds(format);
                map.remove("format");
                if let Some((min, max)) = bounds {
                    tighten(map, "minimum", min, End::Lower);
                    tighten(map, "maximum", max, End::Upper);
                }
            }
            // Every value is a schema or a map of schemas, except the data keywords.
            map.iter_mut()
                .filter(|(key, _)| !DATA_KEYWORDS.contains(&key.as_str()))
                .for_each(|(_, value)| standardize(value));
        }
        Value::Array(items) => items.iter_mut().for_each(standardize),
        _ => {}
    }
}

/// Which end of a range a bound closes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Lower,
    Upper,
}

/// Sets `key` to `bound` unless the schema already has a stricter one (a user's
/// `#[schemars(range(..))]` narrower than the type).
fn tighten(map: &mut Map<String, Value>, key: &str, bound: Number, end: End) {
    let stricter = match map.get(key).and_then(Value::as_number) {
        Some(existing) => match compare(&bound, existing) {
            Some(Ordering::Greater) => end == End::Lower,
            Some(Ordering::Less) => end == End::Upper,
            _ => false,
        },
        None => true,
    };
    if stricter {
        map.insert(key.to_owned(), Value::Number(bound));
    }
}

/// Orders two JSON numbers, integers exactly (an `f64` cannot tell `i64::MAX` from
/// `i64::MAX + 1`).
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    let exact = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (exact(a), exact(b)) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}
