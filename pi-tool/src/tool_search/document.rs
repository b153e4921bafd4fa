//! What of a tool is searched, and how much each part counts: its name most, then the words
//! its application added ([`AgentTool::keywords`](crate::AgentTool::keywords)), its description,
//! its parameters' names, and least their descriptions, titles and allowed values. Parameters
//! are read through nested objects, arrays, `anyOf`/`oneOf`/`allOf` and local `$ref`s
//! (`#/$defs/...`, `#/definitions/...`), a few levels deep.

use serde_json::Value;

use super::terms::Analyzer;
use crate::ToolSpec;

/// The searched fields (a term's field is its index in [`FIELD_WEIGHTS`]).
pub(crate) const NAME: u8 = 0;
/// Keywords an application gave the tool.
pub(crate) const KEYWORDS: u8 = 1;
pub(crate) const DESCRIPTION: u8 = 2;
/// A parameter's name (`city`, `repository`).
pub(crate) const PARAMETER_NAME: u8 = 3;
/// A parameter's description or title, or one of its allowed values.
pub(crate) const PARAMETER_TEXT: u8 = 4;

/// How much a term of each field counts: a term of the name three times a word of the
/// description, a keyword twice, a parameter's name once, and the words of a parameter's
/// description, title or allowed values half (longer and more generic text than the tool's
/// own description).
pub(crate) const FIELD_WEIGHTS: [f32; 5] = [3.0, 2.0, 1.0, 1.0, 0.5];

/// How deep parameters are read (each object, array or `$ref` is one level).
const MAX_DEPTH: usize = 6;

/// The terms (ids of `analyzer`'s) of a tool with their fields, and the terms of its name
/// alone (for whole-name matches).
pub(crate) fn document(
    spec: &ToolSpec,
    keywords: &[String],
    analyzer: &mut Analyzer,
) -> (Vec<(u32, u8)>, Vec<u32>) {
    let mut out = Vec::new();
    let mut name = Vec::new();
    analyzer.ids_into(&spec.name, &mut name);
    out.extend(name.iter().map(|&t| (t, NAME)));
    let mut scratch = Vec::new();
    for keyword in keywords {
        add(analyzer, keyword, KEYWORDS, &mut scratch, &mut out);
    }
    add(
        analyzer,
        &spec.description,
        DESCRIPTION,
        &mut scratch,
        &mut out,
    );
    let mut walk = Walk {
        root: &spec.parameters,
        analyzer,
        scratch,
        out,
        refs: Vec::new(),
    };
    walk.schema(&spec.parameters, 0);
    (walk.out, name)
}

fn add(
    analyzer: &mut Analyzer,
    text: &str,
    field: u8,
    scratch: &mut Vec<u32>,
    out: &mut Vec<(u32, u8)>,
) {
    scratch.clear();
    analyzer.ids_into(text, scratch);
    out.extend(scratch.drain(..).map(|t| (t, field)));
}

struct Walk<'a, 'b> {
    root: &'a Value,
    analyzer: &'b mut Analyzer,
    scratch: Vec<u32>,
    out: Vec<(u32, u8)>,
    /// The `$ref`s being followed (a schema that refers to itself is read once).
    refs: Vec<&'a str>,
}

impl<'a> Walk<'a, '_> {
    fn text(&mut self, text: &str, field: u8) {
        add(self.analyzer, text, field, &mut self.scratch, &mut self.out);
    }

    /// A schema's searchable parts: its properties (name, description, title, allowed
    /// values, and what they nest), its items, its branches and what its `$ref` points to.
    fn schema(&mut self, schema: &'a Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some(object) = schema.as_object() else {
            return;
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str)
            && !self.refs.contains(&reference)
            && let Some(target) = local_ref(self.root, reference)
        {
            self.refs.push(reference);
            self.details(target);
            self.schema(target, depth + 1);
            self.refs.pop();
        }
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                self.text(name, PARAMETER_NAME);
                self.details(property);
                self.schema(property, depth + 1);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = object.get(key) {
                self.details(inner);
                self.schema(inner, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
            for branch in object
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.details(branch);
                self.schema(branch, depth + 1);
            }
        }
    }

    /// A schema's own words: description, title, allowed values.
    fn details(&mut self, schema: &Value) {
        for key in ["description", "title"] {
            if let Some(text) = schema.get(key).and_then(Value::as_str) {
                self.text(text, PARAMETER_TEXT);
            }
        }
        let values = schema.get("enum").and_then(Value::as_array);
        for value in values.into_iter().flatten().chain(schema.get("const")) {
            if let Some(text) = value.as_str() {
                self.text(text, PARAMETER_TEXT);
            }
        }
    }
}

/// The schema a local `$ref` (`#/$defs/Name`, `#/definitions/Name`, any JSON pointer within
/// the tool's own schema) points to; `None` for a remote one or a pointer to nothing.
fn local_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn terms_of(parameters: Value) -> Vec<(String, u8)> {
        let spec = ToolSpec {
            name: "t".into(),
            description: String::new(),
            parameters,
        };
        let mut analyzer = Analyzer::new();
        let (terms, _) = document(&spec, &[], &mut analyzer);
        named(&analyzer, terms)
    }

    fn named(analyzer: &Analyzer, terms: Vec<(u32, u8)>) -> Vec<(String, u8)> {
        terms
            .into_iter()
            .map(|(id, field)| (analyzer.term(id).to_owned(), field))
            .collect()
    }

    fn has(terms: &[(String, u8)], term: &str, field: u8) -> bool {
        terms.iter().any(|(t, f)| t == term && *f == field)
    }

    #[test]
    fn fields_count_by_their_weight() {
        let spec = ToolSpec {
            name: "delete_draft".into(),
            description: "Discard an email.".into(),
            parameters: json!({"type": "object", "properties": {"mailbox": {
                "type": "string", "description": "Folder", "enum": ["inbox", "archive"]}}}),
        };
        let mut analyzer = Analyzer::new();
        let (terms, name) = document(&spec, &["trash".into()], &mut analyzer);
        let name: Vec<&str> = name.iter().map(|&id| analyzer.term(id)).collect();
        assert_eq!(name, ["delet", "draft"]);
        let terms = named(&analyzer, terms);
        assert!(has(&terms, "delet", NAME));
        assert!(has(&terms, "trash", KEYWORDS));
        assert!(has(&terms, "discard", DESCRIPTION));
        assert!(has(&terms, "mailbox", PARAMETER_NAME));
        assert!(has(&terms, "folder", PARAMETER_TEXT));
        assert!(has(&terms, "archiv", PARAMETER_TEXT));
    }

    #[test]
    fn local_refs_and_branches_are_read_and_cycles_end() {
        let terms = terms_of(json!({
            "type": "object",
            "properties": {
                "filter": {"$ref": "#/$defs/Filter"},
                "legacy": {"$ref": "#/definitions/Legacy"},
                "remote": {"$ref": "https://example.com/schema.json"},
                "either": {"anyOf": [{"type": "string", "description": "a branch"}, {"type": "null"}]}
            },
            "$defs": {"Filter": {"type": "object", "properties": {
                "path": {"type": "string", "description": "Only commits touching this path"},
                "parent": {"$ref": "#/$defs/Filter"}}}},
            "definitions": {"Legacy": {"type": "string", "enum": ["sepia"]}}
        }));
        assert!(has(&terms, "path", PARAMETER_NAME));
        assert!(has(&terms, "commit", PARAMETER_TEXT));
        assert!(has(&terms, "sepia", PARAMETER_TEXT));
        assert!(has(&terms, "branch", PARAMETER_TEXT));
        // `parent` refers back to Filter: read again only down to the depth limit.
        let paths = terms.iter().filter(|(t, _)| t == "path").count();
        assert!((1..=MAX_DEPTH).contains(&paths), "{paths}");
    }
}
