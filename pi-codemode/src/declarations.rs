//! TypeScript declarations of the callable tools, generated from their JSON Schemas: what the
//! `code` tool's description shows the model.

use serde_json::{Map, Value};

/// How deep `$ref`s and nesting are followed before a type is just `unknown`.
const MAX_DEPTH: usize = 12;

/// One callable tool as the declarations show it.
pub(crate) struct Declared<'a> {
    pub(crate) name: &'a str,
    pub(crate) description: &'a str,
    pub(crate) parameters: &'a Value,
    /// With an output schema the call resolves to the structured value; else to the text.
    pub(crate) output: Option<&'a Value>,
}

/// `declare const tools: { .. }` for the given tools, in the order given (callers sort them).
pub(crate) fn declarations<'a>(tools: impl IntoIterator<Item = &'a Declared<'a>>) -> String {
    let mut out = String::from("declare const tools: {\n");
    for tool in tools {
        member(&mut out, tool, "  ");
    }
    out.push_str("};\n");
    out
}

/// One tool's declaration as a member of `tools` (what `describeTool` answers): its doc
/// comment and `name(args: ..): Promise<..>;`.
pub(crate) fn declaration(tool: &Declared<'_>) -> String {
    let mut out = String::new();
    member(&mut out, tool, "");
    out
}

fn member(out: &mut String, tool: &Declared<'_>, indent: &str) {
    doc_comment(out, indent, tool.description);
    let args = ts_type(tool.parameters, tool.parameters, 0, indent);
    let output = match tool.output {
        Some(schema) => ts_type(schema, schema, 0, indent),
        None => "string".into(),
    };
    out.push_str(&format!(
        "{indent}{}(args: {args}): Promise<{output}>;\n",
        property_name(tool.name)
    ));
}

fn doc_comment(out: &mut String, indent: &str, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let text = text.replace("*/", "*\\/");
    let mut lines = text.lines();
    if text.lines().count() == 1 {
        out.push_str(&format!(
            "{indent}/** {} */\n",
            lines.next().unwrap_or_default()
        ));
        return;
    }
    out.push_str(&format!("{indent}/**\n"));
    for line in lines {
        out.push_str(&format!("{indent} * {}\n", line.trim_end()).replace(" * \n", " *\n"));
    }
    out.push_str(&format!("{indent} */\n"));
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn property_name(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        Value::String(name.to_owned()).to_string()
    }
}

fn union(types: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for ty in types {
        if !unique.contains(&ty) {
            unique.push(ty);
        }
    }
    match unique.len() {
        0 => "never".into(),
        _ if unique.iter().any(|t| t == "unknown") => "unknown".into(),
        _ => unique.join(" | "),
    }
}

/// The TypeScript type of `schema`; `root` resolves local `$ref`s.
fn ts_type(schema: &Value, root: &Value, depth: usize, indent: &str) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let schema = match schema {
        Value::Bool(true) => return "unknown".into(),
        Value::Bool(false) => return "never".into(),
        Value::Object(schema) => schema,
        _ => return "unknown".into(),
    };
    if let Some(Value::String(reference)) = schema.get("$ref") {
        return match reference.strip_prefix('#').and_then(|p| root.pointer(p)) {
            Some(target) => ts_type(target, root, depth + 1, indent),
            None => "unknown".into(),
        };
    }
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return union(values.iter().map(Value::to_string).collect());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            return union(
                options
                    .iter()
                    .map(|option| ts_type(option, root, depth + 1, indent))
                    .collect(),
            );
        }
    }
    if let Some(Value::Array(parts)) = schema.get("allOf") {
        let parts: Vec<String> = parts
            .iter()
            .map(|part| ts_type(part, root, depth + 1, indent))
            .collect();
        return match parts.len() {
            0 => "unknown".into(),
            1 => parts.into_iter().next().unwrap_or_default(),
            _ => parts
                .iter()
                .map(|p| format!("({p})"))
                .collect::<Vec<_>>()
                .join(" & "),
        };
    }
    match schema.get("type") {
        Some(Value::String(ty)) => typed(ty, schema, root, depth, indent),
        Some(Value::Array(types)) => union(
            types
                .iter()
                .filter_map(Value::as_str)
                .map(|ty| typed(ty, schema, root, depth, indent))
                .collect(),
        ),
        _ if schema.contains_key("properties") => object(schema, root, depth, indent),
        _ => "unknown".into(),
    }
}

fn typed(
    ty: &str,
    schema: &Map<String, Value>,
    root: &Value,
    depth: usize,
    indent: &str,
) -> String {
    match ty {
        "string" => "string".into(),
        "integer" | "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => {
            if let Some(Value::Array(items)) = schema.get("prefixItems") {
                let items: Vec<String> = items
                    .iter()
                    .map(|item| ts_type(item, root, depth + 1, indent))
                    .collect();
                return format!("[{}]", items.join(", "));
            }
            let item = schema.get("items").map_or_else(
                || "unknown".into(),
                |item| ts_type(item, root, depth + 1, indent),
            );
            if item.contains(' ') && !item.starts_with('{') {
                format!("({item})[]")
            } else {
                format!("{item}[]")
            }
        }
        "object" => object(schema, root, depth, indent),
        _ => "unknown".into(),
    }
}

fn object(schema: &Map<String, Value>, root: &Value, depth: usize, indent: &str) -> String {
    let required: Vec<&str> = match schema.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let inner = format!("{indent}  ");
    let mut members = String::new();
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            if let Some(Value::String(description)) = property.get("description") {
                doc_comment(&mut members, &inner, description);
            }
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let ty = ts_type(property, root, depth + 1, &inner);
            members.push_str(&format!(
                "{inner}{}{optional}: {ty};\n",
                property_name(name)
            ));
        }
    }
    match schema.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        Some(extra @ Value::Object(_)) => {
            let ty = ts_type(extra, root, depth + 1, &inner);
            members.push_str(&format!("{inner}[key: string]: {ty};\n"));
        }
        _ if members.is_empty() => return "{ [key: string]: unknown }".into(),
        _ => {}
    }
    if members.is_empty() {
        return "{}".into();
    }
    format!("{{\n{members}{indent}}}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Declared, declarations};

    #[test]
    fn declares_arguments_and_results_from_the_schemas() {
        let parameters = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city."},
                "units": {"enum": ["c", "f"]},
                "days": {"type": ["integer", "null"]},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}}
            },
            "required": ["city"],
            "$defs": {"Tag": {"type": "string"}}
        });
        let output = json!({"type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]});
        let text = declarations(&[
            Declared {
                name: "weather",
                description: "Get the weather.",
                parameters: &parameters,
                output: Some(&output),
            },
            Declared {
                name: "my-search",
                description: "Search.",
                parameters: &json!({"type": "object"}),
                output: None,
            },
        ]);
        assert_eq!(
            text,
            "declare const tools: {
  /** Get the weather. */
  weather(args: {
    /** The city. */
    city: string;
    units?: \"c\" | \"f\";
    days?: number | null;
    tags?: string[];
  }): Promise<{
    temp: number;
  }>;
  /** Search. */
  \"my-search\"(args: { [key: string]: unknown }): Promise<string>;
};
"
        );
    }
}
