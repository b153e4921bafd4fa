//! Script values as JSON: what `JSON.stringify` makes of a value, read straight into a
//! `serde_json::Value` instead of through text (the engine's stringify builds a wrapper, a key
//! array and a stack per call, and the text is then parsed again: most of a nested call's cost
//! for small arguments).
//!
//! The walk follows QuickJS's own `JSON.stringify` (ECMA-262 `SerializeJSONProperty`) for the
//! values scripts build: `toJSON` is asked for (own or inherited, a getter or a pollution of
//! `Object.prototype` included) and called with the property's key; getters run in the same
//! order; own enumerable string keys, in their order; `undefined`, functions and symbols are
//! left out of objects and `null` in arrays; non-finite numbers are `null`; a cycle is the same
//! `TypeError`. Ordinary objects (of `Object.prototype` or none) and arrays are walked here;
//! anything else (a class instance, a `Map`, a `Proxy`, a boxed primitive, a BigInt, a
//! `JSON.rawJSON` value) is given to `JSON.stringify` itself, after its `toJSON` was called here.
//! Strings with unpaired surrogates get U+FFFD for them (JSON text cannot carry them to serde).
//!
//! The walk stops at the depth no host accepts ([`MAX_SUPPORTED_ARGUMENT_DEPTH`]) and at a size
//! the engine's memory cap would have stopped the text at, so a script cannot make the host
//! allocate more than the engine itself may.

use pi_tool::MAX_SUPPORTED_ARGUMENT_DEPTH;
use rquickjs::atom::PredefinedAtom;
use rquickjs::function::This;
use std::rc::Rc;

use rquickjs::{
    Array, Atom, Coerced, Ctx, Exception, FromJs, Function, Object, Persistent, Type, Value,
};
use serde_json::{Map, Number, Value as Json};

/// Why a value has no JSON.
pub(crate) enum NotJson {
    /// The script's own code threw (a getter, `toJSON`), or a cycle or a BigInt did, as in
    /// `JSON.stringify`: the exception is pending in the context.
    Thrown(rquickjs::Error),
    /// Nested deeper than any host accepts.
    TooDeep,
    /// Larger, as JSON text, than the engine's memory cap.
    TooLarge,
}

impl From<rquickjs::Error> for NotJson {
    fn from(err: rquickjs::Error) -> Self {
        NotJson::Thrown(err)
    }
}

impl NotJson {
    /// What the model reads (the thrown case is described by the caller, with its line).
    pub(crate) fn message(&self, memory_cap: usize) -> String {
        match self {
            NotJson::Thrown(err) => err.to_string(),
            NotJson::TooDeep => format!(
                "it nests deeper than {MAX_SUPPORTED_ARGUMENT_DEPTH} levels of objects and arrays"
            ),
            NotJson::TooLarge => format!(
                "as JSON it is larger than the engine's memory cap ({} MiB)",
                memory_cap >> 20
            ),
        }
    }
}

/// The realm's own `Object.prototype`, `JSON.isRawJSON` and `String.prototype.toWellFormed`,
/// taken before the script runs (so that a script replacing `Object` or those functions changes
/// nothing here). Kept as persistent handles outside the engine's heap, and dropped before the
/// context is: the bridge functions hold no engine value themselves, so the engine's collector
/// sees every reference it has to free.
pub(crate) struct JsonIntrinsics {
    object_prototype: Persistent<Object<'static>>,
    is_raw_json: Persistent<Function<'static>>,
    to_well_formed: Persistent<Function<'static>>,
}

impl JsonIntrinsics {
    /// Taken from `ctx`'s globals: call it before any script code runs.
    pub(crate) fn take(ctx: &Ctx<'_>) -> rquickjs::Result<Self> {
        let globals = ctx.globals();
        let object: Object<'_> = globals.get("Object")?;
        let json: Object<'_> = globals.get("JSON")?;
        let string: Object<'_> = globals.get("String")?;
        let string_prototype: Object<'_> = string.get("prototype")?;
        let object_prototype: Object<'_> = object.get("prototype")?;
        let is_raw_json: Function<'_> = json.get("isRawJSON")?;
        let to_well_formed: Function<'_> = string_prototype.get("toWellFormed")?;
        Ok(JsonIntrinsics {
            object_prototype: Persistent::save(ctx, object_prototype),
            is_raw_json: Persistent::save(ctx, is_raw_json),
            to_well_formed: Persistent::save(ctx, to_well_formed),
        })
    }
}

/// Reads values of one context as JSON.
pub(crate) struct JsonReader<'js> {
    ctx: Ctx<'js>,
    intrinsics: Rc<JsonIntrinsics>,
    object_prototype: Object<'js>,
    max_bytes: usize,
}

impl<'js> JsonReader<'js> {
    /// A reader for `ctx`, whose values may take up to `max_bytes` as JSON text.
    pub(crate) fn new(
        ctx: &Ctx<'js>,
        intrinsics: Rc<JsonIntrinsics>,
        max_bytes: usize,
    ) -> rquickjs::Result<Self> {
        Ok(JsonReader {
            ctx: ctx.clone(),
            object_prototype: intrinsics.object_prototype.clone().restore(ctx)?,
            intrinsics,
            max_bytes,
        })
    }

    /// `value` as `JSON.stringify(value)` reads it; `None` where stringify gives `undefined`
    /// (`undefined`, a function, a symbol).
    pub(crate) fn read(&self, value: Value<'js>) -> Result<Option<Json>, NotJson> {
        let mut walk = Walk {
            reader: self,
            ancestors: Vec::new(),
            bytes: 0,
        };
        walk.property(value, Key::Top)
    }

    /// A JavaScript string as UTF-8, unpaired surrogates as U+FFFD.
    fn text(&self, string: &rquickjs::String<'js>) -> rquickjs::Result<String> {
        match string.to_string() {
            Ok(text) => Ok(text),
            Err(_) => {
                let to_well_formed = self.intrinsics.to_well_formed.clone().restore(&self.ctx)?;
                let fixed: rquickjs::String<'js> = to_well_formed.call((This(string.clone()),))?;
                fixed.to_string()
            }
        }
    }

    fn is_raw_json(&self, object: &Object<'js>) -> rquickjs::Result<bool> {
        let is_raw_json = self.intrinsics.is_raw_json.clone().restore(&self.ctx)?;
        is_raw_json.call((object.clone(),))
    }
}

/// The key a value is read under: what its `toJSON` is called with.
#[derive(Clone, Copy)]
enum Key<'a, 'js> {
    Top,
    Index(u32),
    Name(&'a Atom<'js>),
}

struct Walk<'r, 'js> {
    reader: &'r JsonReader<'js>,
    /// The objects being read (a cycle check, and the depth).
    ancestors: Vec<Object<'js>>,
    /// The JSON text the value would take so far.
    bytes: usize,
}

impl<'js> Walk<'_, 'js> {
    fn ctx(&self) -> &Ctx<'js> {
        &self.reader.ctx
    }

    fn take(&mut self, bytes: usize) -> Result<(), NotJson> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.reader.max_bytes {
            return Err(NotJson::TooLarge);
        }
        Ok(())
    }

    /// `SerializeJSONProperty`: `toJSON`, then the value.
    fn property(&mut self, value: Value<'js>, key: Key<'_, 'js>) -> Result<Option<Json>, NotJson> {
        let value = match value.as_object() {
            Some(object) => {
                let to_json: Value<'js> = object.get(PredefinedAtom::ToJSON)?;
                match to_json.as_function() {
                    Some(to_json) => to_json.call((This(value.clone()), self.key(key)?))?,
                    None => value,
                }
            }
            None => value,
        };
        self.value(value)
    }

    fn key(&self, key: Key<'_, 'js>) -> rquickjs::Result<Value<'js>> {
        Ok(match key {
            Key::Top => rquickjs::String::from_str(self.ctx().clone(), "")?.into_value(),
            Key::Index(index) => {
                rquickjs::String::from_str(self.ctx().clone(), &index.to_string())?.into_value()
            }
            Key::Name(atom) => atom.to_js_string()?.into_value(),
        })
    }

    /// `SerializeJSONProperty` after `toJSON`.
    fn value(&mut self, value: Value<'js>) -> Result<Option<Json>, NotJson> {
        let json = match value.type_of() {
            Type::Null => Json::Null,
            Type::Bool => Json::Bool(value.as_bool().unwrap_or_default()),
            Type::Int => Json::from(value.as_int().unwrap_or_default()),
            Type::Float => self.number(&value)?,
            Type::String => {
                let text = value.as_string().map(|s| self.reader.text(s)).transpose()?;
                let text = text.unwrap_or_default();
                self.take(text.len() + 2)?;
                return Ok(Some(Json::String(text)));
            }
            Type::Array => return self.array(value).map(Some),
            Type::Object => {
                let object = value.as_object().expect("an object").clone();
                if self.is_ordinary(&object)? {
                    return self.object(object).map(Some);
                }
                return self.stringified(value);
            }
            Type::Function | Type::Constructor => return Ok(None),
            Type::Undefined | Type::Symbol | Type::Uninitialized => return Ok(None),
            _ => return self.stringified(value),
        };
        self.take(8)?;
        Ok(Some(json))
    }

    /// A float as the text `JSON.stringify` writes for it would parse: integers as integers.
    fn number(&mut self, value: &Value<'js>) -> Result<Json, NotJson> {
        let float = value.as_float().unwrap_or_default();
        if !float.is_finite() {
            return Ok(Json::Null);
        }
        // Integers of a double that every integer up to it is exactly: the text is the digits.
        const EXACT: f64 = 9_007_199_254_740_992.0;
        if float.fract() == 0.0 && float.abs() < EXACT {
            return Ok(Json::from(float as i64));
        }
        if float.fract() == 0.0 {
            // Past 2^53 the engine writes the shortest digits that read back as the double
            // (`9223372036854776000`): take its text, as before.
            let text = Coerced::<String>::from_js(self.ctx(), value.clone())?.0;
            return Ok(serde_json::from_str(&text).unwrap_or(Json::Null));
        }
        Ok(Number::from_f64(float).map_or(Json::Null, Json::Number))
    }

    /// An object of `Object.prototype`, or of none that is not a `JSON.rawJSON` value.
    fn is_ordinary(&self, object: &Object<'js>) -> rquickjs::Result<bool> {
        match object.get_prototype() {
            Some(prototype) => Ok(prototype == self.reader.object_prototype),
            None => Ok(!self.reader.is_raw_json(object)?),
        }
    }

    /// Enters `object`: the cycle check and the depth.
    fn enter(&mut self, object: &Object<'js>) -> Result<(), NotJson> {
        if self.ancestors.iter().any(|ancestor| ancestor == object) {
            return Err(Exception::throw_type(self.ctx(), "circular reference").into());
        }
        self.within_depth()?;
        self.ancestors.push(object.clone());
        Ok(())
    }

    /// Whether one more level of objects and arrays fits the depth every host accepts.
    fn within_depth(&self) -> Result<(), NotJson> {
        if self.ancestors.len() >= MAX_SUPPORTED_ARGUMENT_DEPTH {
            return Err(NotJson::TooDeep);
        }
        Ok(())
    }

    fn array(&mut self, value: Value<'js>) -> Result<Json, NotJson> {
        let array = Array::from_value(value)?;
        self.enter(array.as_object())?;
        let length: f64 = array.as_object().get(PredefinedAtom::Length)?;
        let length = length as u32;
        // Each element takes two bytes at least (`0,`): too long an array stops before its walk.
        self.take(2 + 2 * length as usize)?;
        let mut items = Vec::with_capacity((length as usize).min(1024));
        for index in 0..length {
            let item: Value<'js> = array.get(index as usize)?;
            items.push(
                self.property(item, Key::Index(index))?
                    .unwrap_or(Json::Null),
            );
        }
        self.ancestors.pop();
        Ok(Json::Array(items))
    }

    fn object(&mut self, object: Object<'js>) -> Result<Json, NotJson> {
        // The keys as they are now (stringify takes them before it reads a value).
        let mut keys = object.keys::<Atom<'js>>().peekable();
        if keys.peek().is_none() {
            // No value inside, so no cycle through it: only the depth counts.
            self.within_depth()?;
            self.take(2)?;
            return Ok(Json::Object(Map::new()));
        }
        self.enter(&object)?;
        self.take(2)?;
        let mut map = Map::new();
        for key in keys {
            let key = key?;
            let item: Value<'js> = object.get(key.clone())?;
            if let Some(item) = self.property(item, Key::Name(&key))? {
                let name = self.reader.text(&key.to_js_string()?)?;
                self.take(name.len() + 4)?;
                map.insert(name, item);
            }
        }
        self.ancestors.pop();
        Ok(Json::Object(map))
    }

    /// A value this walk leaves to `JSON.stringify` (its `toJSON` was already called).
    fn stringified(&mut self, value: Value<'js>) -> Result<Option<Json>, NotJson> {
        let Some(text) = self.ctx().json_stringify(value)? else {
            return Ok(None);
        };
        let text = self.reader.text(&text)?;
        self.take(text.len())?;
        match serde_json::from_str(&text) {
            Ok(json) => Ok(Some(json)),
            // serde's own depth limit, the only way such text fails to parse but for `\ud800`
            // escapes of unpaired surrogates (those read as null, as any unreadable value).
            Err(err) if err.to_string().starts_with("recursion limit") => Err(NotJson::TooDeep),
            Err(_) => Ok(Some(Json::Null)),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The walk against the engine's own `JSON.stringify` (QuickJS's, which we did not write):
    //! for generated values, the walk reads what serde reads from stringify's text.

    use std::rc::Rc;

    use proptest::prelude::*;
    use rquickjs::{Context, Ctx, Runtime, Value};
    use serde_json::Value as Json;

    use super::{JsonIntrinsics, JsonReader, NotJson};

    /// What the walk and what stringify's text make of the value `source` evaluates to.
    fn both(source: &str) -> (Result<Option<Json>, String>, Result<Option<Json>, String>) {
        let runtime = Runtime::new().unwrap();
        runtime.set_memory_limit(64 << 20);
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let intrinsics = Rc::new(JsonIntrinsics::take(&ctx).unwrap());
            let reader = JsonReader::new(&ctx, intrinsics, 64 << 20).unwrap();
            // Evaluated once for each, as getters may count their calls.
            let value: Value<'_> = ctx.eval(format!("({source})")).unwrap();
            let walked = match reader.read(value) {
                Ok(json) => Ok(json),
                Err(NotJson::Thrown(_)) => Err(thrown(&ctx)),
                Err(other) => Err(other.message(64 << 20)),
            };
            let value: Value<'_> = ctx.eval(format!("({source})")).unwrap();
            (walked, stringified(&ctx, value))
        })
    }

    fn thrown(ctx: &Ctx<'_>) -> String {
        let thrown = ctx.catch();
        let exception = thrown.as_exception().expect("an Error");
        format!(
            "{}: {}",
            exception.get::<_, String>("name").unwrap_or_default(),
            exception.message().unwrap_or_default()
        )
    }

    /// The oracle: `JSON.stringify`'s text read by serde (strings made well-formed first, as
    /// serde refuses the `\ud800` escapes stringify writes for unpaired surrogates).
    fn stringified<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Result<Option<Json>, String> {
        let stringify: rquickjs::Function<'js> = ctx
            .eval(
                "(v) => JSON.stringify(v, (k, x) => typeof x === 'string' ? x.toWellFormed() : x)",
            )
            .unwrap();
        match stringify.call::<_, Option<String>>((value,)) {
            Ok(None) => Ok(None),
            Ok(Some(text)) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| e.to_string()),
            Err(_) => Err(thrown(ctx)),
        }
    }

    /// Equal, but for floats one unit in the last place apart (serde's default float parsing
    /// may round the last digit; the walk takes the double as it is).
    fn same(a: &Json, b: &Json) -> bool {
        match (a, b) {
            (Json::Number(x), Json::Number(y)) if x.is_f64() || y.is_f64() => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                x == y || (x.to_bits() as i64 - y.to_bits() as i64).abs() <= 1
            }
            (Json::Array(x), Json::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
            }
            (Json::Object(x), Json::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|((kx, x), (ky, y))| kx == ky && same(x, y))
            }
            _ => a == b,
        }
    }

    fn assert_same(source: &str) {
        let (walked, oracle) = both(source);
        let agree = match (&walked, &oracle) {
            (Ok(Some(a)), Ok(Some(b))) => same(a, b),
            (a, b) => a == b,
        };
        assert!(
            agree,
            "{source}\n walked: {walked:?}\n stringify: {oracle:?}"
        );
    }

    const LEAVES: &[&str] = &[
        "null",
        "true",
        "false",
        "undefined",
        "0",
        "-0",
        "1",
        "-1",
        "2147483647",
        "-2147483649",
        "0.1",
        "0.1 + 0.2",
        "1e21",
        "-1e21",
        "1e300",
        "5e-324",
        "2 ** 53",
        "2 ** 53 + 2",
        "2 ** 60",
        "2 ** 63",
        "2 ** 64",
        "-(2 ** 63)",
        "NaN",
        "Infinity",
        "-Infinity",
        "''",
        "'text'",
        "'a\"b\\\\c\\n\\u0000'",
        "'é ✓ 😀'",
        "'\\ud800'",
        "'x\\udc00y'",
        "(() => 1)",
        "Symbol('s')",
        "new Date(0)",
        "new Map([[1, 2]])",
        "new Set([1])",
        "new Number(3)",
        "new String('s')",
        "new Boolean(false)",
        "JSON.rawJSON('12')",
        "new (class P { constructor() { this.x = 1; } })()",
        "({ toJSON(key) { return 'key:' + key; } })",
        "({ get g() { return 5; } })",
        "Object.create(null)",
        "new Proxy({ a: 1 }, {})",
        "new Proxy([1, 2], {})",
        "[, 1, , 2]",
        "new Error('e')",
        "new Uint8Array([1, 2])",
        "Object.assign(Object.create(null), { z: 1, a: [2] })",
        "Object.defineProperty({}, 'hidden', { value: 1, enumerable: false })",
        "Object.assign([1, 2], { extra: 3 })",
        "{ [Symbol('k')]: 1, k: 2 }",
        "new (class Q { toJSON() { return [this.constructor.name]; } })()",
    ];

    const KEYS: &[&str] = &[
        "a",
        "b",
        "\"1\"",
        "\"01\"",
        "\"-1\"",
        "\"a b\"",
        "\"é\"",
        "[\"__proto__\"]",
        "\"\"",
        "\"toJSON\"",
        "\"10\"",
        "\"2\"",
    ];

    fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            prop::sample::select(LEAVES).prop_map(str::to_owned),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| match f {
                f if f.is_nan() => "NaN".to_owned(),
                f if f.is_infinite() => if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned(),
                f => format!("{f:?}"),
            }),
            "\\PC{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6)
                    .prop_map(|items| format!("[{}]", items.join(", "))),
                prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(
                    |entries| {
                        let body: Vec<String> =
                            entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                        format!("({{{}}})", body.join(", "))
                    }
                ),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn the_walk_reads_what_json_stringify_writes(source in value()) {
            assert_same(&source);
        }
    }

    #[test]
    fn each_kind_of_value_reads_as_json_stringify_writes_it() {
        for leaf in LEAVES {
            assert_same(leaf);
            assert_same(&format!("[{leaf}]"));
            assert_same(&format!("({{ k: {leaf} }})"));
        }
        // A polluted prototype's toJSON is asked for as stringify asks for it.
        assert_same(
            "(() => { Object.prototype.toJSON = function (k) { return 'p' + k; }; return { a: [1] }; })()",
        );
        assert_same("(() => { Array.prototype.toJSON = () => 'arr'; return { a: [1] }; })()");
        assert_same(
            "(() => { BigInt.prototype.toJSON = function () { return this.toString(); }; return { n: 10n }; })()",
        );
        // Getters run in key order and see what earlier ones did.
        assert_same(
            "(() => { let n = 0; return { get a() { return ++n; }, get b() { return ++n; } }; })()",
        );
        assert_same(
            "(() => { const o = { get a() { delete o.b; return 1; }, b: 2, c: 3 }; return o; })()",
        );
    }

    #[test]
    fn a_cycle_or_a_bigint_throws_as_json_stringify_does() {
        for source in [
            "(() => { const a = {}; a.self = a; return a; })()",
            "(() => { const a = []; a.push({ a }); return a; })()",
            "10n",
            "{ n: 10n }",
            "[Object(1n)]",
            "{ get boom() { throw new RangeError('boom'); } }",
        ] {
            let (walked, oracle) = both(source);
            assert!(walked.is_err(), "{source}: {walked:?}");
            assert_eq!(walked, oracle, "{source}");
        }
        // The same object twice, not in a cycle, is fine.
        assert_same("(() => { const a = { x: 1 }; return [a, a, { a }]; })()");
    }

    #[test]
    fn too_deep_or_too_large_stops_with_a_reason() {
        let (walked, _) =
            both("(() => { let v = 0; for (let i = 0; i < 200; i++) v = [v]; return v; })()");
        assert!(walked.unwrap_err().contains("deeper than 128"));
        let (walked, _) =
            both("(() => { let v = 0; for (let i = 0; i < 128; i++) v = [v]; return v; })()");
        assert!(walked.unwrap().is_some());
        let (walked, _) = both("(() => { const a = []; a.length = 2 ** 32 - 1; return a; })()");
        assert!(walked.unwrap_err().contains("memory cap"));
    }
}
