//! Builds the provider-neutral JSON Schema of a parameter type, once per tool.

mod formats;

use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde_json::{Map, Value};

const DEFS_PREFIX: &str = "#/$defs/";

/// The JSON Schema of `T` as a tool's `parameters`: schemars' draft 2020-12 schema with the root
/// `$schema`, `title` and `description` removed, every non-recursive `$ref` inlined (a
/// recursive type keeps its `$defs` entry), and numeric formats turned into bounds (see
/// [`provider_neutral`]).
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Args { /// The city.
///     city: String, days: Option<u8> }
///
/// let schema = pi_tool::schema_for::<Args>();
/// assert_eq!(schema["required"], serde_json::json!(["city"]));
/// assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
/// ```
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<T>();
    provider_neutral(schema.to_value())
}

/// Applies the rewrites of [`schema_for`] to a schema built elsewhere (a hand-written tool's).
///
/// Also replaces schemars' numeric `format`s (`int32`, `uint8`, `float`, ...), which JSON Schema
/// does not define and strict validators refuse, with the `minimum`/`maximum` the Rust type can
/// hold; only the formats the spec defines (`date-time`, `uuid`, ...) are kept.
pub fn provider_neutral(mut schema: Value) -> Value {
    formats::standardize(&mut schema);
    let Value::Object(mut root) = schema else {
        return schema;
    };
    root.remove("$schema");
    root.remove("title");
    root.remove("description");
    // Some providers reject an object schema without `properties` (a tool with no arguments).
    if root.get("type").and_then(Value::as_str) == Some("object")
        && !root.contains_key("properties")
    {
        root.insert("properties".into(), Value::Object(Map::new()));
    }
    let defs = match root.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        Some(other) => {
            root.insert("$defs".into(), other);
            return Value::Object(root);
        }
        None => return Value::Object(root),
    };
    let recursive = recursive_defs(&defs);
    let mut inliner = Inliner {
        defs: &defs,
        recursive: &recursive,
        done: HashMap::new(),
    };
    let mut root = inliner.rewrite(Value::Object(root));
    if !recursive.is_empty() {
        let kept: Map<String, Value> = defs
            .iter()
            .filter(|(name, _)| recursive.contains(name.as_str()))
            .map(|(name, def)| (name.clone(), inliner.rewrite(def.clone())))
            .collect();
        if let Value::Object(root) = &mut root {
            root.insert("$defs".into(), Value::Object(kept));
        }
    }
    root
}

/// The name a local `$ref` points at, unescaped (`~1` is `/`, `~0` is `~`).
fn ref_target(schema: &Map<String, Value>) -> Option<String> {
    let reference = schema.get("$ref")?.as_str()?;
    let name = reference.strip_prefix(DEFS_PREFIX)?;
    Some(name.replace("~1", "/").replace("~0", "~"))
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(name) = ref_target(map) {
                out.push(name);
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Definitions that can reach themselves through references: these must stay as `$ref`s.
fn recursive_defs(defs: &Map<String, Value>) -> HashSet<String> {
    let edges: HashMap<&str, Vec<String>> = defs
        .iter()
        .map(|(name, def)| {
            let mut refs = Vec::new();
            collect_refs(def, &mut refs);
            (name.as_str(), refs)
        })
        .collect();
    let mut recursive = HashSet::new();
    for start in defs.keys() {
        let mut seen = HashSet::new();
        let mut stack: Vec<&str> = edges[start.as_str()].iter().map(String::as_str).collect();
        while let Some(next) = stack.pop() {
            if next == start {
                recursive.insert(start.clone());
                break;
            }
            if seen.insert(next)
                && let Some(more) = edges.get(next)
            {
                stack.extend(more.iter().map(String::as_str));
            }
        }
    }
    recursive
}

struct Inliner<'a> {
    defs: &'a Map<String, Value>,
    recursive: &'a HashSet<String>,
    done: HashMap<String, Value>,
}

impl Inliner<'_> {
    fn rewrite(&mut self, value: Value) -> Value {
        match value {
            Value::Object(mut map) => {
                if let Some(name) = ref_target(&map)
                    && !self.recursive.contains(&name)
                    && let Some(def) = self.inlined(&name)
                {
                    map.remove("$ref");
                    return self.merge(def, map);
                }
                let map = map.into_iter().map(|(k, v)| (k, self.rewrite(v))).collect();
                Value::Object(map)
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.rewrite(v)).collect())
            }
            other => other,
        }
    }

    fn inlined(&mut self, name: &str) -> Option<Value> {
        if let Some(done) = self.done.get(name) {
            return Some(done.clone());
        }
        let def = self.defs.get(name)?.clone();
        let def = self.rewrite(def);
        self.done.insert(name.to_owned(), def.clone());
        Some(def)
    }

    /// The inlined definition with the `$ref`'s siblings (a field's description) laid over it.
    fn merge(&mut self, def: Value, siblings: Map<String, Value>) -> Value {
        let siblings: Map<String, Value> = siblings
            .into_iter()
            .map(|(k, v)| (k, self.rewrite(v)))
            .collect();
        match def {
            Value::Object(mut def) => {
                def.extend(siblings);
                Value::Object(def)
            }
            other if siblings.is_empty() => other,
            other => {
                let mut wrapped = siblings;
                wrapped.insert("allOf".into(), Value::Array(vec![other]));
                Value::Object(wrapped)
            }
        }
    }
}
