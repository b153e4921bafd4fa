//! The quick yes for the usual call: arguments that plainly fit a plain schema (every value of
//! a declared type, nothing to normalize, within the limits) are accepted in one walk. Anything
//! else, and any doubt, takes the full path (limits, normalization, `jsonschema`), which also
//! explains failures; so this check only ever answers "certainly fine" or "ask the full path".
//!
//! It knows the keywords `#[tool]` schemas use: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum` and `const` of strings, `oneOf` of string constants,
//! `anyOf` with at most one branch that can hold an object or array (`Option<T>`), integer
//! `minimum`/`maximum`, `$ref` to `$defs`, and annotations. A node using any other keyword is
//! never a quick yes.

use serde_json::{Map, Value};

use super::definitions::{Definition, Definitions};
use super::shape::Types;
use crate::limits::{ArgumentLimits, MAX_SUPPORTED_ARGUMENT_DEPTH, check_value};

/// Keywords that change nothing a validator checks (with formats off, as ours are).
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
    "nullable",
    "$defs",
    "definitions",
];

/// What an object says of keys it does not declare.
#[derive(Clone, Copy, Default)]
enum Additional {
    #[default]
    Any,
    Denied,
    Node(usize),
}

/// One schema node as a validator reads it (unlike normalization's `Shape`, the branches of a
/// union stay apart).
#[derive(Default)]
struct Node {
    /// Accepted JSON types; empty: any.
    types: Types,
    properties: Vec<(String, usize)>,
    /// Bit `i`: `properties[i]` is required.
    required: u64,
    additional: Additional,
    items: Option<usize>,
    /// The only strings accepted (`enum`, `const`, `oneOf` of constants).
    strings: Option<Vec<String>>,
    /// Integer bounds (`minimum`, `maximum`).
    minimum: Option<i128>,
    maximum: Option<i128>,
    /// `anyOf`: one branch must fit too.
    any_of: Vec<usize>,
    /// `$ref`: the target must fit too (the node has no keywords of its own then). Also the
    /// other branch of an `anyOf` with `{"type": "null"}` (`Option<T>`), with `nullable` set.
    target: Option<usize>,
    /// `null` fits too (the `{"type": "null"}` branch of an `Option<T>`).
    nullable: bool,
    /// A keyword this check does not know: never a quick yes.
    doubt: bool,
}

/// A schema compiled for the quick check; node 0 is the root.
pub(crate) struct Quick {
    nodes: Vec<Node>,
}

impl Quick {
    pub(crate) fn new(schema: &Value) -> Quick {
        let mut builder = Builder {
            nodes: Vec::new(),
            defs: Definitions::of(schema),
        };
        builder.build(schema);
        Quick {
            nodes: builder.nodes,
        }
    }

    /// Whether `arguments` (an object) are within `limits`, need no normalization and are valid.
    pub(crate) fn accepts(&self, arguments: &Value, limits: &ArgumentLimits) -> bool {
        if !arguments.is_object() {
            return false;
        }
        let mut walk = Walk {
            nodes: &self.nodes,
            budget: limits.max_bytes,
            frames_left: MAX_FRAMES,
        };
        let depth = limits.max_depth.min(MAX_SUPPORTED_ARGUMENT_DEPTH);
        walk.fits(0, arguments, depth)
    }
}

/// How deep the walk may recurse: a `$ref` or `anyOf` loop that never descends into the value
/// (or a very long chain) ends here with "ask the full path".
const MAX_FRAMES: usize = 1024;

struct Walk<'a> {
    nodes: &'a [Node],
    /// Bytes left, counted as [`ArgumentLimits::check`] counts them.
    budget: usize,
    frames_left: usize,
}

impl Walk<'_> {
    /// Whether `value` certainly fits node `index` with `depth_left` levels to go.
    fn fits(&mut self, index: usize, value: &Value, depth_left: usize) -> bool {
        let Some(frames_left) = self.frames_left.checked_sub(1) else {
            return false;
        };
        self.frames_left = frames_left;
        let fits = self.fits_node(index, value, depth_left);
        self.frames_left += 1;
        fits
    }

    fn fits_node(&mut self, index: usize, value: &Value, depth_left: usize) -> bool {
        let node = &self.nodes[index];
        if node.doubt {
            return false;
        }
        if let Some(target) = node.target {
            if node.nullable && value.is_null() {
                return self.spend(4);
            }
            return self.fits(target, value, depth_left);
        }
        if !node.any_of.is_empty() {
            // Every branch costs the value the same bytes: a branch that fails gives them back.
            let budget = self.budget;
            let fits_a_branch = node.any_of.iter().any(|&branch| {
                self.budget = budget;
                self.fits(branch, value, depth_left)
            });
            return fits_a_branch && self.fits_own(node, value, depth_left, true);
        }
        self.fits_own(node, value, depth_left, false)
    }

    /// The node's own keywords; `counted`: a branch has counted the value's bytes already.
    #[inline(always)]
    fn fits_own(&mut self, node: &Node, value: &Value, depth_left: usize, counted: bool) -> bool {
        if !node.types.is_any() && !accepts_type(node.types, value) {
            return false;
        }
        match value {
            Value::String(text) => {
                if let Some(strings) = &node.strings
                    && !strings.iter().any(|s| s == text)
                {
                    return false;
                }
                counted || self.spend(text.len() + 2)
            }
            Value::Number(number) => {
                if node.strings.is_some() {
                    return false;
                }
                if node.minimum.is_some() || node.maximum.is_some() {
                    let Some(integer) = as_integer(number) else {
                        return false;
                    };
                    if node.minimum.is_some_and(|min| integer < min)
                        || node.maximum.is_some_and(|max| integer > max)
                    {
                        return false;
                    }
                }
                counted || self.spend(4)
            }
            Value::Null | Value::Bool(_) => node.strings.is_none() && (counted || self.spend(4)),
            // A union has no object or array keywords of its own: its branch checked the rest.
            Value::Array(_) | Value::Object(_) if counted => true,
            Value::Array(items) => {
                if node.strings.is_some() || depth_left == 0 || !self.spend(2) {
                    return false;
                }
                items.iter().all(|item| {
                    self.spend(1)
                        && match node.items {
                            Some(child) => self.fits(child, item, depth_left - 1),
                            None => self.free(item, depth_left - 1),
                        }
                })
            }
            Value::Object(members) => {
                if node.strings.is_some() || depth_left == 0 || !self.spend(2) {
                    return false;
                }
                self.fits_members(node, members, depth_left - 1)
            }
        }
    }

    fn fits_members(
        &mut self,
        node: &Node,
        members: &Map<String, Value>,
        depth_left: usize,
    ) -> bool {
        let mut found = 0u64;
        for (position, (key, member)) in members.iter().enumerate() {
            if !self.spend(key.len() + 4) {
                return false;
            }
            // Models mostly send the keys in the schema's order: try that position first.
            let declared = match node.properties.get(position) {
                Some((name, _)) if name == key => Some(position),
                _ => node.properties.iter().position(|(name, _)| name == key),
            };
            let fits = match (declared, node.additional) {
                (Some(position), _) => {
                    let required = node.required & (1 << position) != 0;
                    // Normalization drops `null` for an optional property: not "as is".
                    if member.is_null() && !required {
                        return false;
                    }
                    found |= 1 << position;
                    self.fits(node.properties[position].1, member, depth_left)
                }
                (None, Additional::Any) => self.free(member, depth_left),
                (None, Additional::Denied) => false,
                (None, Additional::Node(child)) => self.fits(child, member, depth_left),
            };
            if !fits {
                return false;
            }
        }
        found & node.required == node.required
    }

    /// A value the schema does not constrain: only its bytes and depth count.
    fn free(&mut self, value: &Value, depth_left: usize) -> bool {
        check_value(value, &mut self.budget, depth_left).is_ok()
    }

    fn spend(&mut self, bytes: usize) -> bool {
        match self.budget.checked_sub(bytes) {
            Some(left) => {
                self.budget = left;
                true
            }
            None => false,
        }
    }
}

/// `types` takes the value as it is (an integer-only node takes no float, even `5.0`:
/// normalization would rewrite it).
fn accepts_type(types: Types, value: &Value) -> bool {
    match value {
        Value::Number(n) if n.is_f64() => types.has(Types::NUMBER),
        Value::Number(_) => types.has(Types::INTEGER) || types.has(Types::NUMBER),
        other => types.has(Types::of_value(other)),
    }
}

fn as_integer(number: &serde_json::Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

struct Builder<'a> {
    nodes: Vec<Node>,
    defs: Definitions<'a>,
}

impl<'a> Builder<'a> {
    fn alloc(&mut self) -> usize {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    fn build(&mut self, schema: &'a Value) -> usize {
        let index = self.alloc();
        self.build_into(index, schema);
        index
    }

    /// Reads `schema` into node `index` (`true` takes anything; `false`, or a keyword beyond
    /// this check, makes the node a doubt).
    fn build_into(&mut self, index: usize, schema: &'a Value) {
        let doubt = match schema {
            Value::Bool(true) => false,
            Value::Object(map) => !self.fill(index, map),
            _ => true,
        };
        self.nodes[index].doubt |= doubt;
    }

    /// Reads the keywords of `map` into node `index`; `false` when one is beyond this check.
    fn fill(&mut self, index: usize, map: &'a Map<String, Value>) -> bool {
        let keywords = map
            .keys()
            .filter(|key| !ANNOTATIONS.contains(&key.as_str()));
        if let Some(target) = map.get("$ref") {
            // A reference with keywords beside it is left to the full path.
            if keywords.count() != 1 {
                return false;
            }
            let Some(def) = target.as_str().and_then(|target| self.definition(target)) else {
                return false;
            };
            self.nodes[index].target = Some(def);
            return true;
        }
        for (key, value) in map {
            let known = match key.as_str() {
                "type" => self.read_types(index, value),
                "properties" => self.read_properties(index, value),
                "required" => true, // read after the properties
                "additionalProperties" => self.read_additional(index, value),
                "items" => match value {
                    Value::Object(_) => {
                        let child = self.build(value);
                        self.nodes[index].items = Some(child);
                        true
                    }
                    _ => false,
                },
                "enum" => self.read_strings(index, value.as_array().map(|v| v.iter())),
                "const" => self.read_strings(index, Some(std::slice::from_ref(value).iter())),
                "oneOf" => self.read_constant_branches(index, value),
                "anyOf" => self.read_any_of(index, value),
                "minimum" => read_bound(value)
                    .map(|b| self.nodes[index].minimum = Some(b))
                    .is_some(),
                "maximum" => read_bound(value)
                    .map(|b| self.nodes[index].maximum = Some(b))
                    .is_some(),
                other => ANNOTATIONS.contains(&other),
            };
            if !known {
                return false;
            }
        }
        // A union's own keywords are only its type and bounds (what a branch may not undo).
        let node = &self.nodes[index];
        if !node.any_of.is_empty() && (has_structure(node) || node.strings.is_some()) {
            return false;
        }
        self.simplify_option(index);
        self.read_required(index, map.get("required"))
    }

    fn read_types(&mut self, index: usize, value: &Value) -> bool {
        let names: Vec<&str> = match value {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => return false,
        };
        let mut types = Types::default();
        for name in names {
            let flag = Types::from_name(name);
            if flag == 0 {
                return false;
            }
            types.0 |= flag;
        }
        self.nodes[index].types = types;
        true
    }

    fn read_properties(&mut self, index: usize, value: &'a Value) -> bool {
        let Value::Object(properties) = value else {
            return false;
        };
        if properties.len() > 64 {
            return false;
        }
        for (name, schema) in properties {
            let child = self.build(schema);
            self.nodes[index].properties.push((name.clone(), child));
        }
        true
    }

    fn read_required(&mut self, index: usize, value: Option<&Value>) -> bool {
        let Some(value) = value else {
            return true;
        };
        let Value::Array(names) = value else {
            return false;
        };
        for name in names {
            // A required key the node does not declare is left to the full path.
            let Some(position) = name.as_str().and_then(|name| {
                self.nodes[index]
                    .properties
                    .iter()
                    .position(|(key, _)| key == name)
            }) else {
                return false;
            };
            self.nodes[index].required |= 1 << position;
        }
        true
    }

    fn read_additional(&mut self, index: usize, value: &'a Value) -> bool {
        let additional = match value {
            Value::Bool(true) => Additional::Any,
            Value::Bool(false) => Additional::Denied,
            Value::Object(_) => Additional::Node(self.build(value)),
            _ => return false,
        };
        self.nodes[index].additional = additional;
        true
    }

    fn read_strings<'v, I>(&mut self, index: usize, values: Option<I>) -> bool
    where
        I: Iterator<Item = &'v Value>,
    {
        let Some(values) = values else {
            return false;
        };
        let mut strings = Vec::new();
        for value in values {
            let Value::String(text) = value else {
                return false;
            };
            strings.push(text.clone());
        }
        // Both `enum` and `const` on one node: only strings in both.
        let node = &mut self.nodes[index];
        node.strings = Some(match node.strings.take() {
            Some(earlier) => earlier
                .into_iter()
                .filter(|s| strings.contains(s))
                .collect(),
            None => strings,
        });
        true
    }

    /// `oneOf` whose branches are distinct string constants (a documented unit enum): the
    /// same as an `enum` of them.
    fn read_constant_branches(&mut self, index: usize, value: &Value) -> bool {
        let Value::Array(branches) = value else {
            return false;
        };
        let mut constants = Vec::new();
        for branch in branches {
            let Value::Object(map) = branch else {
                return false;
            };
            let only_const = map
                .keys()
                .all(|key| key == "const" || key == "type" || ANNOTATIONS.contains(&key.as_str()));
            let of_strings = map.get("type").is_none_or(|t| t == "string");
            match map.get("const") {
                Some(constant @ Value::String(_)) if only_const && of_strings => {
                    constants.push(constant);
                }
                _ => return false,
            }
        }
        let distinct = constants
            .iter()
            .enumerate()
            .all(|(i, c)| !constants[..i].contains(c));
        distinct && self.read_strings(index, Some(constants.into_iter()))
    }

    /// `anyOf` of typed branches, at most one of which can hold an object or an array, and
    /// only that one with object or array keywords: normalization reads such a union as the
    /// union of the branches' types, and its object or array as that branch's, as this check
    /// does. (A branch of any type could let through a value the union's types would rewrite.)
    fn read_any_of(&mut self, index: usize, value: &'a Value) -> bool {
        let Value::Array(branches) = value else {
            return false;
        };
        let mut structured = 0;
        for branch in branches {
            let child = self.build(branch);
            let Some(reached) = self.reached(child) else {
                return false;
            };
            let node = &self.nodes[reached];
            if node.types.is_any() {
                return false;
            }
            if node.types.has(Types::OBJECT) || node.types.has(Types::ARRAY) {
                structured += 1;
            } else if has_structure(node) {
                return false;
            }
            self.nodes[index].any_of.push(child);
        }
        structured <= 1 && !branches.is_empty()
    }

    /// `anyOf: [X, {"type": "null"}]` with nothing beside it (an `Option<T>`) becomes "null,
    /// or X": one branch to try instead of two.
    fn simplify_option(&mut self, index: usize) {
        let node = &self.nodes[index];
        let own_keywords = !node.types.is_any() || node.minimum.is_some() || node.maximum.is_some();
        let [first, second] = node.any_of[..] else {
            return;
        };
        if own_keywords {
            return;
        }
        let is_null = |i: usize| {
            let branch = &self.nodes[i];
            branch.types.0 == Types::NULL
                && !branch.doubt
                && branch.target.is_none()
                && branch.any_of.is_empty()
                && branch.strings.is_none()
                && branch.minimum.is_none()
                && branch.maximum.is_none()
                && !has_structure(branch)
        };
        let other = match (is_null(first), is_null(second)) {
            (false, true) => first,
            (true, false) => second,
            _ => return,
        };
        let node = &mut self.nodes[index];
        node.any_of.clear();
        node.target = Some(other);
        node.nullable = true;
    }

    /// The node a node stands for, through its references: `None` for a union (not simple
    /// enough to be a branch) or a reference not resolved yet.
    fn reached(&self, mut index: usize) -> Option<usize> {
        for _ in 0..64 {
            let node = &self.nodes[index];
            match node.target {
                Some(target) => index = target,
                None if node.any_of.is_empty() && !node.doubt => return Some(index),
                None => return None,
            }
        }
        None
    }

    /// The node of a `$defs` entry, built once; a recursive reference reuses it.
    fn definition(&mut self, target: &str) -> Option<usize> {
        let (name, def) = match self.defs.find(target)? {
            Definition::Known(index) => return Some(index),
            Definition::New { name, schema } => (name, schema),
        };
        let index = self.alloc();
        self.defs.reserve(name, index);
        self.build_into(index, def);
        Some(index)
    }
}

/// Whether a node has object or array keywords.
fn has_structure(node: &Node) -> bool {
    !node.properties.is_empty()
        || node.items.is_some()
        || !matches!(node.additional, Additional::Any)
        || node.required != 0
}

/// An integer bound (a float bound is left to the full path).
fn read_bound(value: &Value) -> Option<i128> {
    match value {
        Value::Number(number) => as_integer(number),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::validate::shape::Shape;

    /// What the full path says of `value`: within the limits, nothing to normalize, valid.
    fn full_path_takes_as_is(schema: &Value, value: &Value, limits: &ArgumentLimits) -> bool {
        let compiled = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(false)
            .build(schema)
            .expect("the generated schemas compile");
        limits.check("t", value).is_ok()
            && Shape::new(schema).normalize(value).is_none()
            && compiled.is_valid(value)
    }

    fn quick_takes(schema: &Value, value: &Value) -> bool {
        Quick::new(schema).accepts(value, &ArgumentLimits::DEFAULT)
    }

    /// The schema of `echo(text: String, count: i64, mode: Option<Mode>)` as `#[tool]` makes it.
    fn echo_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "count": {"type": "integer", "format": "int64"},
                "mode": {"anyOf": [
                    {"type": "string", "enum": ["upper", "lower", "same"], "description": "How"},
                    {"type": "null"}
                ]}
            },
            "required": ["text", "count"]
        })
    }

    #[test]
    fn arguments_that_fit_a_tools_schema_as_they_are_pass_the_quick_check() {
        let schema = echo_schema();
        for value in [
            json!({"text": "t1", "count": 1}),
            json!({"text": "t2", "count": 2, "mode": "upper"}),
            json!({"text": "", "count": -5, "extra": [1, {"a": null}]}),
        ] {
            assert!(quick_takes(&schema, &value), "{value}");
            assert!(full_path_takes_as_is(
                &schema,
                &value,
                &ArgumentLimits::DEFAULT
            ));
        }
    }

    #[test]
    fn anything_to_normalize_or_refuse_takes_the_full_path() {
        let schema = echo_schema();
        for value in [
            json!({"text": "t", "count": "3"}),             // normalized to 3
            json!({"text": "t", "count": 3.0}),             // normalized to 3
            json!({"text": "t", "count": 3, "mode": null}), // null optional: dropped
            json!({"text": 7, "count": 3}),                 // normalized to "7"
            json!({"text": "t", "count": 3, "mode": "loud"}),
            json!({"text": "t"}),
            json!("{\"text\": \"t\", \"count\": 3}"), // argument text: parsed first
            json!([1, 2]),
        ] {
            assert!(!quick_takes(&schema, &value), "{value}");
        }
    }

    #[test]
    fn the_quick_check_counts_bytes_and_depth_as_the_limits_do() {
        let schema = json!({"type": "object"});
        let value = json!({"a": [[1]], "b": "xyz"});
        let mut exact = usize::MAX;
        check_value(&value, &mut exact, 64).unwrap_or_else(|_| panic!("within"));
        let cost = usize::MAX - exact;
        let quick = Quick::new(&schema);
        assert!(quick.accepts(&value, &ArgumentLimits::DEFAULT.max_bytes(cost)));
        assert!(!quick.accepts(&value, &ArgumentLimits::DEFAULT.max_bytes(cost - 1)));
        assert!(quick.accepts(&value, &ArgumentLimits::DEFAULT.max_depth(3)));
        assert!(!quick.accepts(&value, &ArgumentLimits::DEFAULT.max_depth(2)));
    }

    #[test]
    fn unknown_keywords_and_reference_loops_are_left_to_the_full_path() {
        let value = json!({"a": "xy"});
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": "string", "minLength": 3}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
                   "$defs": {"A": {"$ref": "#/$defs/A"}}}),
            json!({"type": "object", "properties": {"a": {"anyOf": [{}, {"type": "null"}]}}}),
        ] {
            assert!(!quick_takes(&schema, &value), "{schema}");
        }
        // Two object branches: normalization reads `a` as both branches' `a` (an integer), so
        // "5" would be rewritten although the second branch takes it as it is.
        let two_objects = json!({"type": "object", "properties": {"x": {"anyOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {"type": "object", "properties": {"a": {}}}
        ]}}});
        let value = json!({"x": {"a": "5"}});
        assert!(!full_path_takes_as_is(
            &two_objects,
            &value,
            &ArgumentLimits::DEFAULT
        ));
        assert!(!quick_takes(&two_objects, &value));
        // A recursive type (a tree) is fine: each level descends into the value.
        let tree = json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }, "required": ["name"]}}
        });
        let value = json!({"name": "a", "children": [{"name": "b", "children": []}]});
        assert!(quick_takes(&tree, &value));
        assert!(!quick_takes(&tree, &json!({"name": "a", "children": [{}]})));
        // `Option<T>` takes null where it is required; a plain reference does not.
        let option = json!({"type": "object", "required": ["a"], "properties": {
            "a": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]},
            "b": {"$ref": "#/$defs/N"}
        }, "$defs": {"N": {"type": "integer"}}});
        assert!(quick_takes(&option, &json!({"a": null, "b": 1})));
        assert!(!quick_takes(&option, &json!({"a": 1, "b": null})));
    }

    /// Schemas of the kinds `#[tool]` makes, some with keywords the quick check leaves alone.
    fn schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!({"type": "string"})),
            Just(json!({"type": "integer"})),
            Just(json!({"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255})),
            Just(json!({"type": "integer", "minimum": -3, "maximum": 3})),
            Just(json!({"type": "number"})),
            Just(json!({"type": "boolean"})),
            Just(json!({"type": "null"})),
            Just(json!({"type": ["string", "null"]})),
            Just(json!({"type": ["integer", "string"]})),
            Just(json!({"enum": ["a", "b"]})),
            Just(json!({"type": "string", "enum": ["a", "5"]})),
            Just(json!({"const": "a"})),
            Just(
                json!({"oneOf": [{"const": "a", "description": "A"}, {"type": "string", "const": "b"}]})
            ),
            Just(json!({})),
            Just(json!(true)),
            Just(json!({"type": "string", "maxLength": 1})),
            Just(json!({"type": "number", "maximum": 1.5})),
            Just(json!({"type": "integer", "minimum": 0.5})),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            let names = prop::sample::subsequence(vec!["a", "b", "c"], 0..=3);
            prop_oneof![
                (
                    prop::collection::vec(inner.clone(), 3),
                    names,
                    prop_oneof![
                        Just(None),
                        Just(Some(json!(false))),
                        Just(Some(json!(true))),
                        inner.clone().prop_map(Some)
                    ],
                    any::<bool>()
                )
                    .prop_map(|(children, required, additional, typed)| {
                        let mut object = Map::new();
                        if typed {
                            object.insert("type".into(), json!("object"));
                        }
                        let properties: Map<String, Value> = ["a", "b", "c"]
                            .into_iter()
                            .zip(children)
                            .map(|(name, child)| (name.to_owned(), child))
                            .collect();
                        object.insert("properties".into(), Value::Object(properties));
                        object.insert("required".into(), json!(required));
                        if let Some(additional) = additional {
                            object.insert("additionalProperties".into(), additional);
                        }
                        Value::Object(object)
                    }),
                inner
                    .clone()
                    .prop_map(|items| json!({"type": "array", "items": items})),
                inner
                    .clone()
                    .prop_map(|t| json!({"anyOf": [t, {"type": "null"}]})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
                inner.prop_map(|def| json!({"$ref": "#/$defs/D", "$defs": {"D": def}})),
            ]
        })
    }

    /// Values near what the schemas take: their keys, numbers as numbers and as text, nulls.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!(null)),
            Just(json!(true)),
            Just(json!("true")),
            Just(json!(5)),
            Just(json!(-4)),
            Just(json!(300)),
            Just(json!(u64::MAX)),
            Just(json!(5.0)),
            Just(json!(2.5)),
            Just(json!("5")),
            Just(json!("a")),
            Just(json!("b")),
            Just(json!("")),
            Just(json!("{\"a\": 1}")),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop::sample::select(vec!["a", "b", "c", "d"]),
                    inner,
                    0..4
                )
                .prop_map(|members| {
                    Value::Object(
                        members
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect(),
                    )
                }),
            ]
        })
    }

    /// `$defs` lifted to the root, where references find them; `a` required or not.
    fn rooted(schema: Value, required: bool) -> Value {
        fn lift(value: &mut Value, defs: &mut Map<String, Value>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::Object(found)) = map.shift_remove("$defs") {
                        for (name, mut def) in found {
                            lift(&mut def, defs);
                            defs.insert(name, def);
                        }
                    }
                    map.values_mut().for_each(|child| lift(child, defs));
                }
                Value::Array(items) => items.iter_mut().for_each(|child| lift(child, defs)),
                _ => {}
            }
        }
        let mut schema = json!({"type": "object", "properties": {"a": schema, "b": {}}});
        if required {
            schema["required"] = json!(["a"]);
        }
        let mut defs = Map::new();
        lift(&mut schema, &mut defs);
        if !defs.is_empty() {
            schema["$defs"] = Value::Object(defs);
        }
        schema
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The quick check's one promise: what it takes, the full path takes unchanged.
        #[test]
        fn a_quick_yes_is_the_full_paths_yes(
            schema in schema(),
            value in value(),
            max_bytes in prop_oneof![Just(usize::MAX), 4usize..80],
            max_depth in 1usize..5,
            required in any::<bool>(),
        ) {
            let schema = rooted(schema, required);
            let value = json!({"a": value});
            let limits = ArgumentLimits::DEFAULT.max_bytes(max_bytes).max_depth(max_depth);
            if Quick::new(&schema).accepts(&value, &limits) {
                prop_assert!(
                    full_path_takes_as_is(&schema, &value, &limits),
                    "schema {schema}\nvalue {value}\nlimits {limits:?}"
                );
            }
        }
    }
}
