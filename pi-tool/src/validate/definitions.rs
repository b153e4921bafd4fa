//! A schema's `$defs` as the schema walkers (normalization's `Shape`, the quick walk) meet
//! them: each definition gets one node, reserved before it is built, so that a reference
//! inside it (a recursive type) finds that node instead of building it again.

use std::collections::HashMap;

use serde_json::{Map, Value};

pub(crate) struct Definitions<'a> {
    defs: Option<&'a Map<String, Value>>,
    nodes: HashMap<&'a str, usize>,
}

/// What a `#/$defs/<name>` reference names.
pub(crate) enum Definition<'a> {
    /// Met before: its node.
    Known(usize),
    /// Met first now: reserve its node ([`Definitions::reserve`]), then build it.
    New { name: &'a str, schema: &'a Value },
}

impl<'a> Definitions<'a> {
    /// The definitions of the schema whose root is `root`.
    pub(crate) fn of(root: &'a Value) -> Self {
        Definitions {
            defs: root.get("$defs").and_then(Value::as_object),
            nodes: HashMap::new(),
        }
    }

    /// The definition `reference` names, if the schema has it.
    pub(crate) fn find(&self, reference: &str) -> Option<Definition<'a>> {
        let name = reference.strip_prefix("#/$defs/")?;
        let (name, schema) = self.defs?.get_key_value(name)?;
        Some(match self.nodes.get(name.as_str()) {
            Some(&node) => Definition::Known(node),
            None => Definition::New { name, schema },
        })
    }

    /// Gives definition `name` its node, before anything inside it is built.
    pub(crate) fn reserve(&mut self, name: &'a str, node: usize) {
        self.nodes.insert(name, node);
    }
}
