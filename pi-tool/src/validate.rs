//! Validation of a model's arguments: parse, normalize losslessly, check against the compiled
//! schema, and explain failures so the model can correct itself.

mod alternatives;
mod definitions;
mod number;
mod quick;
mod reference_depth;
mod report;
mod shape;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::limits::MAX_SUPPORTED_ARGUMENT_DEPTH;
use crate::{AgentTool, ArgumentLimits, ToolError, ToolSpec};
use quick::Quick;
pub(crate) use reference_depth::check_reference_depth;
use shape::Shape;

/// A tool's schema compiled once: the `jsonschema` validator plus what normalization needs.
///
/// `#[tool]` keeps one per tool in a `static`; a hand-written tool may build one with
/// [`ArgumentValidator::new`] and return it from [`AgentTool::validator`].
pub struct ArgumentValidator {
    tool_name: String,
    compiled: Result<jsonschema::Validator, String>,
    shape: Shape,
    /// The one-walk check of arguments that fit as they are.
    quick: Quick,
    /// The schema, to explain a failed union from its branches.
    schema: Value,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator")
            .field("tool_name", &self.tool_name)
            .field("compiled", &self.compiled.is_ok())
            .finish_non_exhaustive()
    }
}

impl ArgumentValidator {
    /// Compiles `spec.parameters`. A schema that does not compile is reported on every call
    /// (as an error result) rather than panicking. So is one whose `$ref`s nest deeper than
    /// compiling it could recurse safely (an MCP server's schema with a chain of thousands of
    /// references): it is not compiled at all.
    pub fn new(spec: &ToolSpec) -> Self {
        if let Err(refused) = check_reference_depth(&spec.parameters) {
            // Nothing recursive sees the schema: the report builds on an empty one.
            let empty = Value::Object(Default::default());
            return ArgumentValidator {
                tool_name: spec.name.clone(),
                compiled: Err(refused),
                shape: Shape::new(&empty),
                quick: Quick::new(&Value::Bool(false)),
                schema: empty,
            };
        }
        let compiled = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(false)
            .build(&spec.parameters)
            .map_err(|err| err.to_string());
        ArgumentValidator {
            tool_name: spec.name.clone(),
            compiled,
            shape: Shape::new(&spec.parameters),
            quick: Quick::new(&spec.parameters),
            schema: spec.parameters.clone(),
        }
    }

    /// Checks example arguments ([`AgentTool::input_examples`](crate::AgentTool::input_examples)):
    /// valid as they are, with nothing to coerce, since an example teaches the model the exact
    /// shape of a call. The error says why not.
    pub fn check_example(&self, example: &Value) -> Result<(), String> {
        match self.validate_borrowed(example) {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err("it matches the parameters schema only after coercion".into()),
            Err(error) => Err(format!("it does not match the parameters schema: {error}")),
        }
    }

    /// Validates arguments as they arrived (after `prepare_arguments`) and returns them
    /// normalized (untrusted arguments go through [`ArgumentLimits::check`] first, as in
    /// [`validate_arguments`]): numeric strings to numbers, `"true"` to `true`, numbers to strings, `null`
    /// optional properties removed, JSON strings parsed where an object or array is expected.
    ///
    /// The `Err` displays pi's format with clearer messages:
    ///
    /// ```text
    /// Validation failed for tool "get_weather":
    ///   - city: missing required property
    ///
    /// Received arguments:
    /// {}
    /// ```
    pub fn validate(&self, arguments: Value) -> Result<Value, ToolError> {
        match self.validate_borrowed(&arguments)? {
            Some(normalized) => Ok(normalized),
            None => Ok(arguments),
        }
    }

    /// [`validate`](Self::validate) without taking the arguments: `Ok(None)` means they are
    /// valid exactly as they are, so a caller holding them needs no copy.
    pub fn validate_borrowed(&self, arguments: &Value) -> Result<Option<Value>, ToolError> {
        if self.accepts_as_is(arguments, &CHECKED) {
            return Ok(None);
        }
        self.validate_borrowed_in_full(arguments)
    }

    /// [`validate_borrowed`](Self::validate_borrowed) for arguments the quick walk
    /// ([`accepts_as_is`](Self::accepts_as_is)) has not taken: not tried again.
    pub(crate) fn validate_borrowed_in_full(
        &self,
        arguments: &Value,
    ) -> Result<Option<Value>, ToolError> {
        match arguments {
            Value::String(text) => match parse_argument_string(text) {
                Ok(parsed) => Ok(Some(self.check_quick_first(&parsed)?.unwrap_or(parsed))),
                Err(problem) => Err(self.failure(&[problem], arguments)),
            },
            Value::Null => {
                let empty = Value::Object(Default::default());
                Ok(Some(self.check_quick_first(&empty)?.unwrap_or(empty)))
            }
            other => self.check(other),
        }
    }

    /// Whether `arguments` can be used exactly as they are: within `limits`, with nothing to
    /// normalize, and valid. One walk that allocates nothing, for the usual call; `false` only
    /// means "take the full path" ([`ArgumentLimits::check`], then
    /// [`validate_borrowed`](Self::validate_borrowed)), which decides and explains. Schemas
    /// with keywords beyond what `#[tool]` types produce always take the full path.
    ///
    /// ```
    /// use pi_tool::{ArgumentLimits, ArgumentValidator, ToolSpec};
    /// use serde_json::json;
    ///
    /// let spec = ToolSpec {
    ///     name: "greet".into(),
    ///     description: "Greet someone.".into(),
    ///     parameters: json!({
    ///         "type": "object",
    ///         "properties": {"name": {"type": "string"}},
    ///         "required": ["name"]
    ///     }),
    /// };
    /// let validator = ArgumentValidator::new(&spec);
    /// let limits = ArgumentLimits::DEFAULT;
    /// assert!(validator.accepts_as_is(&json!({"name": "Ada"}), &limits));
    /// // "7" would be normalized, a number is not a name: both take the full path.
    /// assert!(!validator.accepts_as_is(&json!({"name": 7}), &limits));
    /// assert!(!validator.accepts_as_is(&json!({}), &limits));
    /// ```
    pub fn accepts_as_is(&self, arguments: &Value, limits: &ArgumentLimits) -> bool {
        self.compiled.is_ok() && self.quick.accepts(arguments, limits)
    }

    /// [`check`](Self::check) after the quick walk.
    fn check_quick_first(&self, arguments: &Value) -> Result<Option<Value>, ToolError> {
        if self.accepts_as_is(arguments, &CHECKED) {
            return Ok(None);
        }
        self.check(arguments)
    }

    /// Normalizes and checks parsed arguments; `Ok(None)`: valid unchanged.
    fn check(&self, arguments: &Value) -> Result<Option<Value>, ToolError> {
        let compiled = match &self.compiled {
            Ok(compiled) => compiled,
            Err(err) => {
                let problem = report::Problem {
                    path: "root".into(),
                    message: format!("the tool's schema does not compile: {err}"),
                };
                return Err(self.failure(&[problem], arguments));
            }
        };
        let normalized = self.shape.normalize(arguments);
        let candidate = normalized.as_ref().unwrap_or(arguments);
        if compiled.is_valid(candidate) {
            return Ok(normalized);
        }
        let problems = report::problems(compiled.iter_errors(candidate), &self.shape, &self.schema);
        Err(self.failure(&problems, arguments))
    }

    fn failure(&self, problems: &[report::Problem], received: &Value) -> ToolError {
        let received = report::received(received);
        let lines: usize = problems
            .iter()
            .map(|p| p.path.len() + p.message.len() + 6)
            .sum();
        let mut text = String::with_capacity(64 + self.tool_name.len() + lines + received.len());
        text.push_str("Validation failed for tool \"");
        text.push_str(&self.tool_name);
        text.push_str("\":\n");
        if problems.is_empty() {
            text.push_str("  - root: Unknown validation error\n");
        }
        for problem in problems {
            text.push_str("  - ");
            if !problem.path.is_empty() {
                text.push_str(&problem.path);
                text.push_str(": ");
            }
            text.push_str(&problem.message);
            text.push('\n');
        }
        text.push_str("\nReceived arguments:\n");
        text.push_str(&received);
        ToolError::new(text)
    }
}

/// The limits of arguments whose limits were checked before (or by the caller of a validator):
/// only the quick walk's depth is bounded.
const CHECKED: ArgumentLimits = ArgumentLimits::DEFAULT
    .max_bytes(usize::MAX)
    .max_depth(MAX_SUPPORTED_ARGUMENT_DEPTH);

/// Arguments sent as a string: empty means `{}`, otherwise it must hold JSON.
fn parse_argument_string(text: &str) -> Result<Value, report::Problem> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text).map_err(|err| report::Problem {
        path: "root".into(),
        message: format!("arguments are not valid JSON ({err})"),
    })
}

/// Validates `arguments` for `tool` and returns them normalized (see [`ArgumentValidator::validate`]).
///
/// Uses the tool's own compiled validator, or for a tool without one a process-wide cache keyed
/// by its schema: the schema is never compiled twice. Arguments over
/// [`ArgumentLimits::DEFAULT`] are refused first, so nothing recursive ever sees a hostile depth.
pub fn validate_arguments(tool: &dyn AgentTool, arguments: &Value) -> Result<Value, ToolError> {
    ArgumentLimits::DEFAULT.check(&tool.spec().name, arguments)?;
    validate_owned_unchecked(tool, arguments.clone())
}

/// [`validate_arguments`] taking the arguments by value (no copy).
pub fn validate_owned(tool: &dyn AgentTool, arguments: Value) -> Result<Value, ToolError> {
    ArgumentLimits::DEFAULT.check(&tool.spec().name, &arguments)?;
    validate_owned_unchecked(tool, arguments)
}

/// [`validate_arguments`] borrowing the arguments: `Ok(None)` when they are valid as they are.
pub fn validate_borrowed(
    tool: &dyn AgentTool,
    arguments: &Value,
) -> Result<Option<Value>, ToolError> {
    ArgumentLimits::DEFAULT.check(&tool.spec().name, arguments)?;
    validate_borrowed_unchecked(tool, arguments)
}

/// [`validate_owned`] for arguments whose limits were checked already.
pub(crate) fn validate_owned_unchecked(
    tool: &dyn AgentTool,
    arguments: Value,
) -> Result<Value, ToolError> {
    match tool.validator() {
        Some(validator) => validator.validate(arguments),
        None => cached_validator(tool.spec()).validate(arguments),
    }
}

/// [`validate_borrowed`] for arguments whose limits were checked already.
pub(crate) fn validate_borrowed_unchecked(
    tool: &dyn AgentTool,
    arguments: &Value,
) -> Result<Option<Value>, ToolError> {
    match tool.validator() {
        Some(validator) => validator.validate_borrowed(arguments),
        None => cached_validator(tool.spec()).validate_borrowed(arguments),
    }
}

type Cache = Mutex<HashMap<String, Vec<(Value, Arc<ArgumentValidator>)>>>;

fn cached_validator(spec: &ToolSpec) -> Arc<ArgumentValidator> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let entries = cache.entry(spec.name.clone()).or_default();
    if let Some((_, validator)) = entries
        .iter()
        .find(|(schema, _)| *schema == spec.parameters)
    {
        return Arc::clone(validator);
    }
    let validator = Arc::new(ArgumentValidator::new(spec));
    entries.push((spec.parameters.clone(), Arc::clone(&validator)));
    validator
}
