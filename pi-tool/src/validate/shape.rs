//! A compact view of a schema (types, properties, items) built once, used to normalize
//! loosely-typed arguments without losing information.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::definitions::{Definition, Definitions};
use super::number::parse_exact;

/// JSON types a schema node accepts, as bit flags; empty means "anything".
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Types(pub(crate) u8);

impl Types {
    pub(crate) const NULL: u8 = 1;
    pub(crate) const BOOLEAN: u8 = 2;
    pub(crate) const INTEGER: u8 = 4;
    pub(crate) const NUMBER: u8 = 8;
    pub(crate) const STRING: u8 = 16;
    pub(crate) const ARRAY: u8 = 32;
    pub(crate) const OBJECT: u8 = 64;

    pub(crate) fn from_name(name: &str) -> u8 {
        match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => 0,
        }
    }

    pub(crate) fn of_value(value: &Value) -> u8 {
        match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(n) if n.is_f64() => Self::NUMBER,
            Value::Number(_) => Self::INTEGER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        }
    }

    pub(crate) fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    pub(crate) fn is_any(self) -> bool {
        self.0 == 0
    }
}

/// One schema node, reduced to what normalization needs.
#[derive(Default)]
pub(crate) struct Node {
    pub(crate) types: Types,
    pub(crate) properties: Vec<(String, usize)>,
    pub(crate) required: Vec<String>,
    pub(crate) items: Option<usize>,
    /// A tuple's positions (`prefixItems`); `items` then covers the positions after them.
    pub(crate) prefix_items: Vec<usize>,
    pub(crate) additional: Option<usize>,
    /// `additionalProperties: false`: unknown keys are reported on their own.
    pub(crate) closed: bool,
    /// A union whose branches are told apart by a tag (serde's internally and adjacently
    /// tagged enums): each branch's own node, so a value normalizes as the variant its tag
    /// names rather than as the union of all variants.
    pub(crate) variants: Option<Box<Variants>>,
}

/// The branches of a tagged union, by the value of their tag property.
pub(crate) struct Variants {
    tag: String,
    /// `(tag value, the branch's own node)`, one per branch; no two share a tag value.
    by_tag: Vec<(Value, usize)>,
}

impl Node {
    pub(crate) fn property(&self, name: &str) -> Option<usize> {
        self.properties
            .iter()
            .find(|(key, _)| key == name)
            .map(|&(_, node)| node)
    }

    /// The node of the array item at `position`: its `prefixItems` entry, else `items`.
    pub(crate) fn item(&self, position: usize) -> Option<usize> {
        self.prefix_items.get(position).copied().or(self.items)
    }

    pub(crate) fn property_names(&self) -> impl Iterator<Item = &str> {
        self.properties.iter().map(|(key, _)| key.as_str())
    }
}

/// The schema as an arena of nodes; node 0 is the root. Recursive references share nodes.
pub(crate) struct Shape {
    nodes: Vec<Node>,
}

impl Shape {
    pub(crate) fn new(schema: &Value) -> Shape {
        let mut builder = Builder {
            nodes: Vec::new(),
            defs: Definitions::of(schema),
            merges: Vec::new(),
            queued: Vec::new(),
        };
        let root = builder.build(schema);
        debug_assert_eq!(root, 0);
        Shape {
            nodes: builder.finish(),
        }
    }

    /// The node at a path of property names and array indices, if the schema describes it.
    pub(crate) fn at_path<'a, I: IntoIterator<Item = &'a str>>(&self, path: I) -> Option<&Node> {
        let mut node = self.nodes.first()?;
        for segment in path {
            let position = segment.parse::<usize>().ok();
            let next = node
                .property(segment)
                .or_else(|| position.and_then(|i| node.item(i)))
                .or(node.additional)?;
            node = &self.nodes[next];
        }
        Some(node)
    }

    /// `value` rewritten to fit the schema losslessly, or `None` if nothing needed rewriting.
    pub(crate) fn normalize(&self, value: &Value) -> Option<Value> {
        self.normalize_at(0, value)
    }

    fn normalize_at(&self, index: usize, value: &Value) -> Option<Value> {
        let node = &self.nodes[index];
        if let (Some(variants), Value::Object(map)) = (&node.variants, value)
            && let Some(tag) = map.get(&variants.tag)
            && let Some(&(_, branch)) = variants.by_tag.iter().find(|(value, _)| value == tag)
        {
            // The tag names the variant: its fields mean what that variant says (a string
            // where it wants an object is that object as JSON, even when another variant's
            // field of the same name is a string).
            return self.normalize_at(branch, value);
        }
        if let Some(coerced) = coerce_scalar(node.types, value) {
            // A coerced value (e.g. a JSON string parsed into an object) is normalized too.
            return Some(self.normalize_at(index, &coerced).unwrap_or(coerced));
        }
        match value {
            Value::Object(map) => self.normalize_object(node, map).map(Value::Object),
            Value::Array(items) => {
                let mut changed: Option<Vec<Value>> = None;
                for (i, item) in items.iter().enumerate() {
                    let Some(item_node) = node.item(i) else {
                        break;
                    };
                    if let Some(new) = self.normalize_at(item_node, item) {
                        changed.get_or_insert_with(|| items.clone())[i] = new;
                    }
                }
                changed.map(Value::Array)
            }
            _ => None,
        }
    }

    fn normalize_object(
        &self,
        node: &Node,
        map: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let mut changes: Vec<(&String, Option<Value>)> = Vec::new();
        for (key, value) in map {
            let declared = node.property(key);
            // `null` means "absent" only for a property the schema declares and does not
            // require: in a map or a free-form value it is data.
            if value.is_null() && declared.is_some() && !node.required.iter().any(|r| r == key) {
                changes.push((key, None));
                continue;
            }
            let Some(child) = declared.or(node.additional) else {
                continue;
            };
            if let Some(new) = self.normalize_at(child, value) {
                changes.push((key, Some(new)));
            }
        }
        if changes.is_empty() {
            return None;
        }
        let mut out = map.clone();
        for (key, change) in changes {
            match change {
                Some(value) => {
                    out.insert(key.clone(), value);
                }
                None => {
                    out.shift_remove(key);
                }
            }
        }
        Some(out)
    }
}

/// The required properties of an object schema that hold one constant value (`const`, or an
/// `enum` of one), with that value: what may tag a union's branch.
fn tags(branch: &Value) -> Vec<(&str, &Value)> {
    let Some(map) = branch.as_object() else {
        return Vec::new();
    };
    let (Some(Value::Object(properties)), Some(Value::Array(required))) =
        (map.get("properties"), map.get("required"))
    else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(name, _)| required.iter().any(|r| r.as_str() == Some(name.as_str())))
        .filter_map(|(name, property)| {
            let property = property.as_object()?;
            let value = match (property.get("const"), property.get("enum")) {
                (Some(value), _) => value,
                (None, Some(Value::Array(values))) if values.len() == 1 => &values[0],
                _ => return None,
            };
            Some((name.as_str(), value))
        })
        .collect()
}

/// The lossless rewrite of a scalar the schema does not accept, if there is one.
fn coerce_scalar(types: Types, value: &Value) -> Option<Value> {
    if types.is_any() {
        return None;
    }
    let found = Types::of_value(value);
    let accepts_number = types.has(Types::NUMBER);
    let accepts_integer = types.has(Types::INTEGER) || accepts_number;
    match value {
        Value::Number(n) => {
            if types.has(Types::INTEGER) && !accepts_number && found == Types::NUMBER {
                // 5.0 is an integer to JSON Schema but not to serde: send a JSON integer.
                return integral(n.as_f64()?);
            }
            if types.has(found) || (found == Types::INTEGER && accepts_number) {
                return None;
            }
            types
                .has(Types::STRING)
                .then(|| Value::String(n.to_string()))
        }
        Value::Bool(b) => {
            if types.has(Types::BOOLEAN) {
                return None;
            }
            types
                .has(Types::STRING)
                .then(|| Value::String(b.to_string()))
        }
        Value::String(s) => {
            if types.has(Types::STRING) {
                return None;
            }
            let trimmed = s.trim();
            if accepts_integer && let Some(number) = parse_exact(trimmed, accepts_number) {
                return Some(number);
            }
            if types.has(Types::BOOLEAN) {
                if trimmed.eq_ignore_ascii_case("true") {
                    return Some(Value::Bool(true));
                }
                if trimmed.eq_ignore_ascii_case("false") {
                    return Some(Value::Bool(false));
                }
            }
            if (types.has(Types::OBJECT) && trimmed.starts_with('{'))
                || (types.has(Types::ARRAY) && trimmed.starts_with('['))
            {
                return serde_json::from_str::<Value>(trimmed).ok();
            }
            None
        }
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

fn integral(float: f64) -> Option<Value> {
    if float.fract() != 0.0 || !float.is_finite() {
        return None;
    }
    if float >= i64::MIN as f64 && float < i64::MAX as f64 {
        return Some(Value::Number((float as i64).into()));
    }
    if float >= 0.0 && float < u64::MAX as f64 {
        return Some(Value::Number((float as u64).into()));
    }
    None
}

struct Builder<'a> {
    nodes: Vec<Node>,
    defs: Definitions<'a>,
    /// `(into, from)`: node `from` (a `$ref` target or an `anyOf` branch) widens node `into`.
    merges: Vec<(usize, usize)>,
    /// Merges found while merging (same-named properties), applied in the next round.
    queued: Vec<(usize, usize)>,
}

impl<'a> Builder<'a> {
    fn alloc(&mut self) -> usize {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    /// Builds the node of `schema` and returns its index.
    fn build(&mut self, schema: &'a Value) -> usize {
        let index = self.alloc();
        let Value::Object(map) = schema else {
            return index;
        };
        if let Some(target) = map.get("$ref").and_then(Value::as_str)
            && let Some(def) = self.definition(target)
        {
            self.merges.push((index, def));
        }
        let mut types = 0;
        match map.get("type") {
            Some(Value::String(name)) => types |= Types::from_name(name),
            Some(Value::Array(names)) => {
                for name in names.iter().filter_map(Value::as_str) {
                    types |= Types::from_name(name);
                }
            }
            _ => {}
        }
        if types == 0 {
            if let Some(Value::Array(values)) = map.get("enum") {
                types = values.iter().fold(0, |acc, v| acc | Types::of_value(v));
            } else if let Some(value) = map.get("const") {
                types = Types::of_value(value);
            }
        }
        self.nodes[index].types.0 |= types;
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (name, sub) in properties {
                let child = self.build(sub);
                self.nodes[index].properties.push((name.clone(), child));
            }
        }
        if let Some(Value::Array(required)) = map.get("required") {
            let names = required.iter().filter_map(Value::as_str).map(str::to_owned);
            self.nodes[index].required.extend(names);
        }
        if let Some(items @ Value::Object(_)) = map.get("items") {
            let child = self.build(items);
            self.nodes[index].items = Some(child);
        }
        if let Some(Value::Array(positions)) = map.get("prefixItems") {
            for position in positions {
                let child = self.build(position);
                self.nodes[index].prefix_items.push(child);
            }
        }
        if map.get("additionalProperties") == Some(&Value::Bool(false)) {
            self.nodes[index].closed = true;
        }
        if let Some(additional @ Value::Object(_)) = map.get("additionalProperties") {
            let child = self.build(additional);
            self.nodes[index].additional = Some(child);
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                for branch in branches {
                    let child = self.build(branch);
                    self.merges.push((index, child));
                }
                if key != "allOf" && self.nodes[index].variants.is_none() {
                    self.nodes[index].variants = self.variants(branches);
                }
            }
        }
        index
    }

    /// The branches of a union told apart by one required property with a constant value in
    /// each (`{"t": {"const": "Move"}}`), each built again on its own: the nodes built above
    /// are merged into the union's and widened by the other branches.
    fn variants(&mut self, branches: &'a [Value]) -> Option<Box<Variants>> {
        let first = tags(branches.first()?);
        let (tag, _) = first.into_iter().find(|(name, _)| {
            branches
                .iter()
                .all(|branch| tags(branch).iter().any(|(other, _)| other == name))
        })?;
        let mut by_tag: Vec<(Value, usize)> = Vec::with_capacity(branches.len());
        for branch in branches {
            let (_, value) = tags(branch).into_iter().find(|(name, _)| *name == tag)?;
            if by_tag.iter().any(|(seen, _)| seen == value) {
                return None;
            }
            by_tag.push((value.clone(), 0));
        }
        for ((_, node), branch) in by_tag.iter_mut().zip(branches) {
            *node = self.build(branch);
        }
        Some(Box::new(Variants {
            tag: tag.to_owned(),
            by_tag,
        }))
    }

    /// The node of a `$defs` entry, built once; a recursive reference reuses it.
    fn definition(&mut self, target: &str) -> Option<usize> {
        let (name, def) = match self.defs.find(target)? {
            Definition::Known(index) => return Some(index),
            Definition::New { name, schema } => (name, schema),
        };
        let index = self.alloc();
        self.defs.reserve(name, index);
        let built = self.build(def);
        self.merges.push((index, built));
        Some(index)
    }

    /// Applies the merges until nothing changes (merging only adds, and the pairs of nodes
    /// are finite, so this ends).
    fn finish(mut self) -> Vec<Node> {
        let mut seen: HashSet<(usize, usize)> = self.merges.iter().copied().collect();
        loop {
            let mut changed = false;
            let mut position = 0;
            while position < self.merges.len() {
                let (into, from) = self.merges[position];
                if into != from {
                    changed |= self.merge(into, from);
                }
                position += 1;
            }
            // Merging may have queued merges of same-named properties or items.
            let queued: Vec<(usize, usize)> = std::mem::take(&mut self.queued);
            for pair in queued {
                if seen.insert(pair) {
                    self.merges.push(pair);
                    changed = true;
                }
            }
            if !changed {
                return self.nodes;
            }
        }
    }

    /// Widens node `into` with what node `from` accepts. Where both describe the same property
    /// or array position (two variants of a union with a field `c`), the two children are
    /// merged too: the value there may take either form, so normalization must not force it
    /// into the first one's.
    fn merge(&mut self, into: usize, from: usize) -> bool {
        let source = &self.nodes[from];
        let (types, properties, required, items, additional, closed) = (
            source.types,
            source.properties.clone(),
            source.required.clone(),
            source.items,
            source.additional,
            source.closed,
        );
        let prefix_items = source.prefix_items.clone();
        let node = &mut self.nodes[into];
        let before = (
            node.prefix_items.len(),
            node.closed,
            node.types.0,
            node.properties.len(),
            node.required.len(),
            node.items,
            node.additional,
        );
        node.types.0 |= types.0;
        let mut queued = Vec::new();
        for (name, child) in properties {
            match node.property(&name) {
                None => node.properties.push((name, child)),
                Some(existing) if existing != child => queued.push((existing, child)),
                Some(_) => {}
            }
        }
        for name in required {
            if !node.required.contains(&name) {
                node.required.push(name);
            }
        }
        for (mine, theirs) in [(&mut node.items, items), (&mut node.additional, additional)] {
            match (*mine, theirs) {
                (None, _) => *mine = theirs,
                (Some(existing), Some(other)) if existing != other => {
                    queued.push((existing, other))
                }
                _ => {}
            }
        }
        for (position, child) in prefix_items.into_iter().enumerate() {
            match node.prefix_items.get(position) {
                None => node.prefix_items.push(child),
                Some(&existing) if existing != child => queued.push((existing, child)),
                Some(_) => {}
            }
        }
        node.closed |= closed;
        let after = (
            node.prefix_items.len(),
            node.closed,
            node.types.0,
            node.properties.len(),
            node.required.len(),
            node.items,
            node.additional,
        );
        self.queued.extend(queued);
        before != after
    }
}
