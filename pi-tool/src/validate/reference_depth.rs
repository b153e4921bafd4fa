//! How deep compiling a schema can recurse. Every schema compiler here (`jsonschema`, and the
//! `Shape` and quick walk built beside it) recurses through a `$ref` into its target, so a
//! schema from elsewhere (an MCP server's `inputSchema`) with a chain of ten thousand
//! references would overflow the stack and abort the process. A schema parsed from JSON text is
//! at most 128 levels deep, but references chain without nesting; this bounds them first.

use std::collections::HashMap;

use serde_json::Value;

/// The most levels a schema's references may nest ([`reference_depth`]): far above what
/// generated schemas reach (a reference rarely sits more than a few levels into a definition,
/// and chains of definitions are short), and far below what overflows a 2 MiB thread stack.
const MAX_REFERENCE_DEPTH: usize = 512;

/// `Err` with the reason when compiling `schema` could recurse too deep: checked before
/// anything compiles a schema (`ArgumentValidator::new`, a `FnTool`'s build).
pub(crate) fn check_reference_depth(schema: &Value) -> Result<(), String> {
    let depth = reference_depth(schema);
    if depth > MAX_REFERENCE_DEPTH {
        return Err(format!(
            "its references nest {depth} levels deep, more than the {MAX_REFERENCE_DEPTH} levels \
             a schema may reach"
        ));
    }
    Ok(())
}

/// An upper bound on the nesting a compiler meets in `schema`, following its `#...` references:
/// the longest path from the root through reference targets, each target counted with the
/// depth of its own subtree. The members of a reference cycle are counted once each (a compiler
/// does not enter a definition it is already inside).
fn reference_depth(schema: &Value) -> usize {
    let graph = Graph::of(schema);
    graph.longest_path()
}

/// Reference targets (node 0 is the root) with the depth of their subtrees and the targets
/// their subtrees refer to.
struct Graph {
    weights: Vec<usize>,
    edges: Vec<Vec<usize>>,
}

impl Graph {
    fn of(schema: &Value) -> Graph {
        let mut targets: Vec<&Value> = vec![schema];
        let mut index: HashMap<&str, usize> = HashMap::from([("", 0)]);
        let mut graph = Graph {
            weights: Vec::new(),
            edges: Vec::new(),
        };
        let mut next = 0;
        while next < targets.len() {
            let (depth, references) = subtree(targets[next]);
            let mut edges = Vec::new();
            for reference in references {
                let Some(pointer) = reference.strip_prefix('#') else {
                    continue;
                };
                let Some(target) = schema.pointer(pointer) else {
                    continue;
                };
                let position = *index.entry(pointer).or_insert_with(|| {
                    targets.push(target);
                    targets.len() - 1
                });
                edges.push(position);
            }
            graph.weights.push(depth + 1);
            graph.edges.push(edges);
            next += 1;
        }
        graph
    }

    /// The heaviest path from node 0, a cycle counting all its members (Tarjan's strongly
    /// connected components, found in reverse topological order, then one pass over them).
    fn longest_path(&self) -> usize {
        let components = self.components();
        let mut component_of = vec![0; self.weights.len()];
        for (number, members) in components.iter().enumerate() {
            for &member in members {
                component_of[member] = number;
            }
        }
        // Each component comes after every component it reaches.
        let mut longest = vec![0usize; components.len()];
        for (number, members) in components.iter().enumerate() {
            let own: usize = members.iter().map(|&m| self.weights[m]).sum();
            let after = members
                .iter()
                .flat_map(|&m| &self.edges[m])
                .map(|&target| component_of[target])
                .filter(|&other| other != number)
                .map(|other| longest[other])
                .max()
                .unwrap_or(0);
            longest[number] = own.saturating_add(after);
        }
        longest[component_of[0]]
    }

    /// Tarjan's algorithm without recursion.
    fn components(&self) -> Vec<Vec<usize>> {
        let count = self.weights.len();
        let mut order = vec![usize::MAX; count];
        let mut low = vec![0; count];
        let mut on_stack = vec![false; count];
        let mut stack = Vec::new();
        let mut components = Vec::new();
        let mut visited = 0;
        for start in 0..count {
            if order[start] != usize::MAX {
                continue;
            }
            // (node, next edge to look at)
            let mut calls = vec![(start, 0usize)];
            while let Some(top) = calls.len().checked_sub(1) {
                let (node, edge) = calls[top];
                if edge == 0 {
                    order[node] = visited;
                    low[node] = visited;
                    visited += 1;
                    stack.push(node);
                    on_stack[node] = true;
                }
                if let Some(&target) = self.edges[node].get(edge) {
                    calls[top].1 += 1;
                    if order[target] == usize::MAX {
                        calls.push((target, 0));
                    } else if on_stack[target] {
                        low[node] = low[node].min(order[target]);
                    }
                    continue;
                }
                calls.pop();
                if let Some(&(parent, _)) = calls.last() {
                    low[parent] = low[parent].min(low[node]);
                }
                if low[node] == order[node] {
                    let mut members = Vec::new();
                    while let Some(member) = stack.pop() {
                        on_stack[member] = false;
                        members.push(member);
                        if member == node {
                            break;
                        }
                    }
                    components.push(members);
                }
            }
        }
        components
    }
}

/// The nesting depth of a subtree and the `$ref` strings in it (an explicit stack: the value
/// itself may be deep).
fn subtree(value: &Value) -> (usize, Vec<&str>) {
    let mut deepest = 0;
    let mut references = Vec::new();
    let mut pending = vec![(value, 0usize)];
    while let Some((value, depth)) = pending.pop() {
        deepest = deepest.max(depth);
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    match (key.as_str(), child) {
                        ("$ref", Value::String(reference)) => references.push(reference.as_str()),
                        _ => pending.push((child, depth + 1)),
                    }
                }
            }
            Value::Array(items) => pending.extend(items.iter().map(|item| (item, depth + 1))),
            _ => {}
        }
    }
    (deepest, references)
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    /// `D0 -> D1 -> ... -> Dn`, each a bare reference to the next.
    fn chain(n: usize) -> Value {
        let mut defs = Map::new();
        for i in 0..n {
            defs.insert(
                format!("D{i}"),
                json!({"$ref": format!("#/$defs/D{}", i + 1)}),
            );
        }
        defs.insert(format!("D{n}"), json!({"type": "string"}));
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/D0"}}, "$defs": defs})
    }

    #[test]
    fn a_chain_of_references_counts_every_link() {
        let short = reference_depth(&chain(3));
        let long = reference_depth(&chain(20_000));
        assert!(short < 20, "{short}");
        assert!(long > 20_000, "{long}");
    }

    #[test]
    fn a_recursive_type_counts_its_definition_once() {
        let tree = json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }}}
        });
        let depth = reference_depth(&tree);
        assert!(depth < 20, "{depth}");
    }

    #[test]
    fn many_definitions_side_by_side_are_not_a_chain() {
        let mut defs = Map::new();
        let mut properties = Map::new();
        for i in 0..2_000 {
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": {"x": {"type": "string"}}}),
            );
            properties.insert(format!("p{i}"), json!({"$ref": format!("#/$defs/D{i}")}));
        }
        let schema = json!({"type": "object", "properties": properties, "$defs": defs});
        let depth = reference_depth(&schema);
        assert!(depth < 20, "{depth}");
    }
}
