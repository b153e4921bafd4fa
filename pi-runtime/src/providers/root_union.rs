//! A root union (`oneOf`/`anyOf`, e.g. a `#[serde(flatten)]`ed tagged enum) as one object.
//!
//! OpenAI and Anthropic refuse a tool whose parameter schema is a union at the root, and Gemini
//! wants an object there. Such a schema is sent as one object instead: every property of every
//! branch (a property several branches define differently becomes their union; string
//! constants, such as a tag, become one `enum`), required only what every branch requires.
//! The model sees a looser schema; the arguments are still validated against the real one.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

/// The schema with a root union merged into one object; unchanged when the root is no union.
pub(crate) fn object_root(schema: &Value) -> Cow<'_, Value> {
    match schema {
        Value::Object(root) if union_of(root).is_some() => Cow::Owned(merge(root)),
        _ => Cow::Borrowed(schema),
    }
}

/// Whether the root is a union `object_root` rewrites.
pub(crate) fn is_root_union(schema: &Value) -> bool {
    schema.as_object().and_then(union_of).is_some()
}

fn union_of(schema: &Map<String, Value>) -> Option<&Vec<Value>> {
    ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_array))
}

fn merge(root: &Map<String, Value>) -> Value {
    let defs = root.get("$defs").and_then(Value::as_object);
    let mut branches = Vec::new();
    collect_branches(root, defs, &mut branches, 0);

    let mut out: Map<String, Value> = root
        .iter()
        .filter(|(key, _)| !matches!(key.as_str(), "oneOf" | "anyOf" | "properties" | "required"))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    out.insert("type".into(), json!("object"));

    // The root's own properties first (they hold in every branch), then each branch's.
    let mut variants: Vec<(String, Vec<Value>)> = Vec::new();
    let mut add = |name: &str, schema: &Value| match variants.iter_mut().find(|(n, _)| n == name) {
        Some((_, seen)) => {
            if !seen.contains(schema) {
                seen.push(schema.clone());
            }
        }
        None => variants.push((name.to_owned(), vec![schema.clone()])),
    };
    for (name, schema) in properties(root) {
        add(name, schema);
    }
    for branch in &branches {
        for (name, schema) in properties(branch) {
            add(name, schema);
        }
    }
    let merged: Map<String, Value> = variants
        .into_iter()
        .map(|(name, schemas)| (name, combine(schemas)))
        .collect();

    let mut always: Vec<Value> = required(root).cloned().collect();
    if let Some((first, rest)) = branches.split_first() {
        for name in required(first) {
            if rest.iter().all(|b| required(b).any(|n| n == name)) && !always.contains(name) {
                always.push(name.clone());
            }
        }
    }
    out.insert("properties".into(), Value::Object(merged));
    if !always.is_empty() {
        out.insert("required".into(), Value::Array(always));
    }
    Value::Object(out)
}

/// The object branches of a union, nested unions and `$defs` references resolved.
fn collect_branches(
    schema: &Map<String, Value>,
    defs: Option<&Map<String, Value>>,
    out: &mut Vec<Map<String, Value>>,
    depth: usize,
) {
    let Some(branches) = union_of(schema) else {
        return;
    };
    for branch in branches {
        let Some(mut branch) = resolve(branch, defs) else {
            continue;
        };
        if depth < 8
            && let Some(nested) = union_of(&branch).cloned()
        {
            // A branch that is itself a union: its own properties hold in each of its branches.
            let mut inner = Vec::new();
            branch.insert("oneOf".into(), Value::Array(nested));
            collect_branches(&branch, defs, &mut inner, depth + 1);
            for mut sub in inner {
                let own: Vec<(String, Value)> = properties(&branch)
                    .map(|(name, schema)| (name.clone(), schema.clone()))
                    .collect();
                if let Value::Object(map) = sub
                    .entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()))
                {
                    for (name, schema) in own {
                        map.entry(name).or_insert(schema);
                    }
                }
                out.push(sub);
            }
            continue;
        }
        let is_object = branch.get("type").and_then(Value::as_str) == Some("object")
            || branch.contains_key("properties");
        if is_object {
            out.push(branch);
        }
    }
}

/// A branch as an object, following a local `$ref` into `$defs`.
fn resolve(branch: &Value, defs: Option<&Map<String, Value>>) -> Option<Map<String, Value>> {
    let branch = branch.as_object()?;
    match branch.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference.strip_prefix("#/$defs/")?;
            defs?.get(name)?.as_object().cloned()
        }
        None => Some(branch.clone()),
    }
}

fn properties(schema: &Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

fn required(schema: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// One schema for a property the branches define: string constants (a tag) become one string
/// `enum`; different schemas become their `anyOf`.
fn combine(mut schemas: Vec<Value>) -> Value {
    if schemas.len() == 1 {
        return schemas.pop().unwrap_or_default();
    }
    let constants: Option<Vec<Vec<Value>>> = schemas.iter().map(string_constants).collect();
    if let Some(constants) = constants {
        let mut values: Vec<Value> = Vec::new();
        for value in constants.into_iter().flatten() {
            if !values.contains(&value) {
                values.push(value);
            }
        }
        let mut merged = json!({"type": "string", "enum": values});
        if let Some(description) = schemas.iter().find_map(|s| s.get("description")) {
            merged["description"] = description.clone();
        }
        return merged;
    }
    json!({"anyOf": schemas})
}

/// The string values a schema allows when it is a `const` or an `enum` of strings.
fn string_constants(schema: &Value) -> Option<Vec<Value>> {
    if let Some(value @ Value::String(_)) = schema.get("const") {
        return Some(vec![value.clone()]);
    }
    let values = schema.get("enum")?.as_array()?;
    values.iter().all(Value::is_string).then(|| values.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flattened_tagged_enum_becomes_one_object() {
        let schema = json!({
            "type": "object",
            "properties": {"label": {"type": "string"}},
            "required": ["label"],
            "oneOf": [
                {"type": "object", "properties": {"kind": {"type": "string", "const": "circle"}, "radius": {"type": "number"}}, "required": ["kind", "radius"]},
                {"type": "object", "properties": {"kind": {"type": "string", "const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]},
                {"$ref": "#/$defs/Dot"}
            ],
            "$defs": {"Dot": {"type": "object", "properties": {"kind": {"type": "string", "enum": ["dot"]}}, "required": ["kind"]}}
        });
        assert!(is_root_union(&schema));
        assert_eq!(
            object_root(&schema).into_owned(),
            json!({
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "kind": {"type": "string", "enum": ["circle", "square", "dot"]},
                    "radius": {"type": "number"},
                    "side": {"type": "number"}
                },
                "required": ["label", "kind"],
                "$defs": {"Dot": {"type": "object", "properties": {"kind": {"type": "string", "enum": ["dot"]}}, "required": ["kind"]}}
            })
        );
    }

    #[test]
    fn different_schemas_for_one_name_become_a_union_and_plain_roots_stay() {
        let schema = json!({"anyOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            {"type": "null"}
        ]});
        assert_eq!(
            object_root(&schema).into_owned(),
            json!({"type": "object", "properties": {"id": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}, "required": ["id"]})
        );
        let plain = json!({"type": "object", "properties": {}});
        assert!(matches!(object_root(&plain), Cow::Borrowed(_)));
    }
}
