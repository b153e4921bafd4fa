//! Bounds on what one call's arguments may cost, checked before anything parses, validates or
//! copies them: a model (or a client) can send a 50 MB argument or a 100,000-deep array, and
//! the answer must be a quick error result, not a stack overflow or a memory spike.

use serde_json::Value;

use crate::ToolError;

/// The default [`ArgumentLimits::max_bytes`]: 1 MiB.
///
/// Why: the largest output of today's models (about 128k tokens) is roughly 0.5 MB of text, so
/// no call a model can really make reaches it, while an endless or hostile stream stops here.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// The default [`ArgumentLimits::max_depth`]: 128 levels of objects and arrays, the most
/// [supported](MAX_SUPPORTED_ARGUMENT_DEPTH).
///
/// Why: serde_json reads at most 127 levels from text (its recursion limit), so no argument
/// serde would read is refused by default, a recursive type (a tree of sections, two levels
/// per section) included; the walk that checks it recurses at most 128 levels, and every
/// recursive step after it (validation, normalization, error reports) stays far from the
/// stack's end at that depth. Set a lower [`ArgumentLimits::max_depth`] to refuse deep
/// arguments sooner.
pub const DEFAULT_MAX_ARGUMENT_DEPTH: usize = MAX_SUPPORTED_ARGUMENT_DEPTH;

/// The deepest [`ArgumentLimits::max_depth`] honoured: serde_json's own recursion limit, so
/// arguments parsed from text can never be deeper anyway. Larger settings act as this.
pub const MAX_SUPPORTED_ARGUMENT_DEPTH: usize = 128;

/// How large and how deeply nested one call's arguments may be.
///
/// [`prepare_call`](crate::prepare_call) (and so `ToolRegistry::run` and the agent loop)
/// checks them before `prepare_arguments` and validation; the agent loop takes its own from
/// its configuration. A call over a limit gets an error result naming the limit.
///
/// ```
/// use pi_tool::ArgumentLimits;
/// use serde_json::json;
///
/// let limits = ArgumentLimits::DEFAULT.max_depth(2);
/// assert!(limits.check("t", &json!({"a": [1]})).is_ok());
/// let err = limits.check("t", &json!({"a": [[1]]})).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "Arguments for tool \"t\" are nested deeper than the limit of 2 levels; send flatter arguments"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgumentLimits {
    /// The most bytes of argument text (for parsed arguments: an estimate of their JSON text,
    /// counting every string and key by its length). Default [`DEFAULT_MAX_ARGUMENT_BYTES`].
    pub max_bytes: usize,
    /// The most levels of nested objects and arrays (`{}` is one level, `{"a": []}` two).
    /// Default [`DEFAULT_MAX_ARGUMENT_DEPTH`]; at most [`MAX_SUPPORTED_ARGUMENT_DEPTH`] applies.
    pub max_depth: usize,
}

impl Default for ArgumentLimits {
    fn default() -> Self {
        ArgumentLimits::DEFAULT
    }
}

/// What went over a limit.
pub(crate) enum Exceeded {
    Bytes,
    Depth,
}

impl ArgumentLimits {
    /// 1 MiB and 128 levels (see [`DEFAULT_MAX_ARGUMENT_BYTES`], [`DEFAULT_MAX_ARGUMENT_DEPTH`]).
    pub const DEFAULT: ArgumentLimits = ArgumentLimits {
        max_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
        max_depth: DEFAULT_MAX_ARGUMENT_DEPTH,
    };

    /// Sets [`max_bytes`](Self::max_bytes).
    #[must_use]
    pub const fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Sets [`max_depth`](Self::max_depth).
    #[must_use]
    pub const fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Checks a call's raw arguments: a string (argument text that did not parse as it
    /// streamed) by its length and bracket nesting, before anything parses it; parsed
    /// arguments by a walk that stops at the first limit crossed. Allocates nothing and
    /// recurses at most [`MAX_SUPPORTED_ARGUMENT_DEPTH`] levels.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] for the model naming the tool and the limit.
    pub fn check(&self, tool_name: &str, arguments: &Value) -> Result<(), ToolError> {
        let max_depth = self.max_depth.min(MAX_SUPPORTED_ARGUMENT_DEPTH);
        let outcome = match arguments {
            Value::String(text) => check_text(text, self.max_bytes, max_depth),
            other => {
                let mut budget = self.max_bytes;
                check_value(other, &mut budget, max_depth)
            }
        };
        outcome.map_err(|exceeded| self.error(tool_name, exceeded, max_depth))
    }

    fn error(&self, tool_name: &str, exceeded: Exceeded, max_depth: usize) -> ToolError {
        ToolError::new(match exceeded {
            Exceeded::Bytes => format!(
                "Arguments for tool \"{tool_name}\" are larger than the limit of {} bytes. Send \
                 smaller arguments (split the work into several calls)",
                self.max_bytes
            ),
            Exceeded::Depth => format!(
                "Arguments for tool \"{tool_name}\" are nested deeper than the limit of \
                 {max_depth} levels; send flatter arguments"
            ),
        })
    }
}

/// Length first (nothing is scanned when the text is too long), then bracket depth outside
/// strings.
fn check_text(text: &str, max_bytes: usize, max_depth: usize) -> Result<(), Exceeded> {
    if text.len() > max_bytes {
        return Err(Exceeded::Bytes);
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return Err(Exceeded::Depth);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Scalars count a few bytes, strings and keys their length plus quotes and separators.
pub(crate) fn check_value(
    value: &Value,
    budget: &mut usize,
    depth_left: usize,
) -> Result<(), Exceeded> {
    let own = match value {
        Value::String(text) => text.len() + 2,
        Value::Array(_) | Value::Object(_) => {
            if depth_left == 0 {
                return Err(Exceeded::Depth);
            }
            2
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => 4,
    };
    *budget = budget.checked_sub(own).ok_or(Exceeded::Bytes)?;
    match value {
        Value::Array(items) => {
            for item in items {
                *budget = budget.checked_sub(1).ok_or(Exceeded::Bytes)?;
                check_value(item, budget, depth_left - 1)?;
            }
        }
        Value::Object(members) => {
            for (key, member) in members {
                *budget = budget.checked_sub(key.len() + 4).ok_or(Exceeded::Bytes)?;
                check_value(member, budget, depth_left - 1)?;
            }
        }
        _ => {}
    }
    Ok(())
}
