//! A tool's structured result as a script value, built straight from its JSON value: what
//! `JSON.parse` of the value's text makes, without writing the text and parsing it again (that
//! was most of what settling a structured call cost).
//!
//! As `JSON.parse` does, members become data properties (`CreateDataProperty`): a `__proto__`
//! key is an own property, and setters a script put on `Object.prototype` or `Array.prototype`
//! do not run. Numbers are what their text reads as. A value nested deeper than
//! [`MAX_BUILT_DEPTH`] is left to the engine's own `JSON.parse`, with its own stack checks.

use rquickjs::object::Property;
use rquickjs::{Array, Ctx, Object, Value};
use serde_json::{Number, Value as Json};

/// The nesting depth built here; deeper values go through the engine's `JSON.parse`.
const MAX_BUILT_DEPTH: usize = 128;

/// `json` as the script value `JSON.parse` would make of its text.
pub(crate) fn to_js<'js>(ctx: &Ctx<'js>, json: &Json) -> rquickjs::Result<Value<'js>> {
    match build(ctx, json, 0)? {
        Some(value) => Ok(value),
        None => {
            let text = serde_json::to_string(json).unwrap_or_else(|_| "null".into());
            ctx.json_parse(text)
        }
    }
}

/// `None` past [`MAX_BUILT_DEPTH`].
fn build<'js>(ctx: &Ctx<'js>, json: &Json, depth: usize) -> rquickjs::Result<Option<Value<'js>>> {
    if depth > MAX_BUILT_DEPTH {
        return Ok(None);
    }
    let value = match json {
        Json::Null => Value::new_null(ctx.clone()),
        Json::Bool(flag) => Value::new_bool(ctx.clone(), *flag),
        Json::Number(number) => number_value(ctx, number),
        Json::String(text) => rquickjs::String::from_str(ctx.clone(), text)?.into_value(),
        Json::Array(items) => {
            let array = Array::new(ctx.clone())?;
            for (index, item) in items.iter().enumerate() {
                let Some(item) = build(ctx, item, depth + 1)? else {
                    return Ok(None);
                };
                array.as_object().prop(index as u32, data(item))?;
            }
            array.into_value()
        }
        Json::Object(members) => {
            let object = Object::new(ctx.clone())?;
            for (key, item) in members {
                let Some(item) = build(ctx, item, depth + 1)? else {
                    return Ok(None);
                };
                object.prop(key.as_str(), data(item))?;
            }
            object.into_value()
        }
    };
    Ok(Some(value))
}

/// A member as `JSON.parse` defines it: writable, enumerable, configurable.
fn data(value: Value<'_>) -> Property<Value<'_>> {
    Property::from(value).writable().enumerable().configurable()
}

/// A number as its JSON text reads in JavaScript: a double (integers that fit 32 bits as the
/// engine's small integers, as its parser makes them).
fn number_value<'js>(ctx: &Ctx<'js>, number: &Number) -> Value<'js> {
    if let Some(small) = number.as_i64().and_then(|n| i32::try_from(n).ok()) {
        return Value::new_int(ctx.clone(), small);
    }
    // Past 2^53 the digits round to the nearest double, as `JSON.parse` rounds them.
    let float = number
        .as_f64()
        .unwrap_or_else(|| number.to_string().parse().unwrap_or(f64::NAN));
    Value::new_float(ctx.clone(), float)
}

#[cfg(test)]
mod tests {
    //! Against the engine's own `JSON.parse` (QuickJS's, which we did not write): for generated
    //! JSON values, the built value and the parsed text stringify alike, have the same
    //! prototypes and own keys, and no setter of the script runs while they are built.

    use proptest::prelude::*;
    use rquickjs::{Context, Function, Runtime};
    use serde_json::{Map, Value as Json, json};

    use super::to_js;

    /// What the script sees of the built value and of `JSON.parse` of its text: stringified,
    /// with each object's and array's prototype and own keys (`__proto__` included). Setters
    /// planted as a hostile script would must not run while the value is built.
    fn compare(json: &Json) -> (String, String) {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            // Setters a hostile script could plant, counted.
            let _: () = ctx
                .eval(
                    "globalThis.ran = 0;
                     Object.defineProperty(Array.prototype, '0', { set(v) { ran++; }, configurable: true });
                     Object.defineProperty(Object.prototype, 'k', { set(v) { ran++; }, configurable: true });",
                )
                .unwrap();
            let describe: Function<'_> = ctx
                .eval(
                    "(v) => { const shape = (x) => x === null || typeof x !== 'object' ? typeof x :
                       [Array.isArray(x), Object.getPrototypeOf(x) === (Array.isArray(x) ? Array.prototype : Object.prototype),
                        Reflect.ownKeys(x).map(k => [k, shape(x[k])])];
                       return JSON.stringify([v, shape(v)]); }",
                )
                .unwrap();
            let ran = || ctx.globals().get::<_, i32>("ran").unwrap();
            let before = ran();
            let built = to_js(&ctx, json).unwrap();
            assert_eq!(ran(), before, "a planted setter ran while {json} was built");
            let built: String = describe.call((built,)).unwrap();
            let text = serde_json::to_string(json).unwrap();
            let parsed = ctx.json_parse(text).unwrap();
            let parsed: String = describe.call((parsed,)).unwrap();
            (built, parsed)
        })
    }

    fn leaf() -> impl Strategy<Value = Json> {
        prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            any::<i64>().prop_map(Json::from),
            any::<u64>().prop_map(Json::from),
            any::<i32>().prop_map(Json::from),
            prop_oneof![
                Just(0.0),
                Just(-0.0),
                Just(0.1),
                Just(1e300),
                Just(-2.5e-308),
                Just(9_007_199_254_740_993.0),
                Just(2_147_483_648.0),
                any::<f64>(),
            ]
            .prop_map(|float| serde_json::Number::from_f64(float).map_or(Json::Null, Json::Number)),
            ".*".prop_map(Json::String),
        ]
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("__proto__".to_owned()),
            Just("k".to_owned()),
            Just("0".to_owned()),
            Just("10".to_owned()),
            Just("constructor".to_owned()),
            ".{0,6}",
        ]
    }

    fn value() -> impl Strategy<Value = Json> {
        leaf().prop_recursive(6, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                prop::collection::vec((key(), inner), 0..6)
                    .prop_map(|members| Json::Object(members.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn builds_what_json_parse_makes(json in value()) {
            let (built, parsed) = compare(&json);
            prop_assert_eq!(built, parsed);
        }
    }

    #[test]
    fn a_proto_key_is_an_own_member_and_planted_setters_do_not_run() {
        let json = json!({"__proto__": {"polluted": true}, "k": [1, {"0": "x"}], "0": -0.0});
        let (built, parsed) = compare(&json);
        assert_eq!(built, parsed);
        // The `__proto__` member is an own key (of an object of `Object.prototype`).
        assert!(built.contains(r#"["__proto__",[false,true"#), "{built}");
    }

    #[test]
    fn a_value_deeper_than_the_builder_goes_is_parsed_by_the_engine_alike() {
        let mut deep = json!({"leaf": 1});
        for _ in 0..140 {
            deep = json!([deep]);
        }
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let built = to_js(&ctx, &deep).unwrap();
            let built = ctx
                .json_stringify(built)
                .unwrap()
                .unwrap()
                .to_string()
                .unwrap();
            assert_eq!(built, serde_json::to_string(&deep).unwrap());
        });
    }
}
