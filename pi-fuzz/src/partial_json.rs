//! Target: the incremental partial-JSON parser that reads streamed tool-call arguments.

use pi_runtime::providers::PartialJson;
use serde_json::Value;

use crate::split::str_pieces;

/// Input: a split seed byte, then text (lossy UTF-8). Asserts, for any text and any split:
///
/// - pushing the pieces gives the same [`PartialJson::partial`] and completeness as pushing the
///   whole text at once;
/// - every partial value of an object or array stream is an object or array;
/// - for text `serde_json` accepts: [`PartialJson::finish`] equals `serde_json`'s value; a
///   complete object or array is reported complete and its `partial()` equals it too; and every
///   intermediate `partial()` is contained in the final value (it only grows), except that
///   text of whitespace alone gives `{}` (the documented value of empty text).
pub fn partial_json(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(body);
    let expected = serde_json::from_str::<Value>(&text).ok();
    let container = text.trim_start().starts_with(['{', '[']);
    // With a repeated key the last one wins, so an earlier prefix may show another value.
    let monotone = expected.is_some() && serde_json::from_str::<UniqueKeys>(&text).is_ok();

    let mut whole = PartialJson::new();
    whole.push(&text);

    let mut parser = PartialJson::new();
    for piece in str_pieces(&text, seed) {
        parser.push(piece);
        let partial = parser.partial();
        if container {
            assert!(partial.is_object() || partial.is_array(), "{partial}");
        }
        // Nothing but whitespace yet: the documented value of empty text, `{}`, also when an
        // array follows.
        let started = !parser.as_str().trim().is_empty();
        if !started {
            assert_eq!(partial, Value::Object(Default::default()), "empty text");
        }
        if let Some(expected) = &expected
            && container
            && monotone
            && started
        {
            assert!(
                contained(&partial, expected),
                "a prefix's value {partial} is not part of {expected}"
            );
        }
    }
    assert_eq!(parser.as_str(), text);
    assert_eq!(parser.is_complete(), whole.is_complete(), "completeness");
    assert_eq!(parser.partial(), whole.partial(), "partial value");
    if let Some(expected) = expected {
        if container {
            assert!(parser.is_complete(), "complete JSON is not complete");
            assert_eq!(parser.partial(), expected, "partial value of complete JSON");
        }
        assert_eq!(parser.finish(), expected, "final value");
    } else {
        // Not JSON: the final value is still a value (repaired, cut short, or the raw text).
        let _ = parser.finish();
    }
}

/// Whether `part` is what a prefix of `whole`'s text may show: equal scalars, an object with a
/// subset of the keys (each contained), an array with a prefix of the items (each contained),
/// a string that is a prefix.
fn contained(part: &Value, whole: &Value) -> bool {
    match (part, whole) {
        (Value::Object(part), Value::Object(whole)) => part
            .iter()
            .all(|(key, value)| whole.get(key).is_some_and(|w| contained(value, w))),
        (Value::Array(part), Value::Array(whole)) => {
            part.len() <= whole.len() && part.iter().zip(whole).all(|(p, w)| contained(p, w))
        }
        (Value::String(part), Value::String(whole)) => whole.starts_with(part.as_str()),
        (part, whole) => part == whole,
    }
}

/// JSON whose objects never repeat a key (deserializing fails on a repeat).
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut keys = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key) {
                return Err(serde::de::Error::custom("a repeated key"));
            }
            map.next_value::<UniqueKeys>()?;
        }
        Ok(UniqueKeys)
    }
}
