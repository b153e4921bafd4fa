//! Errors: the message a failing tool gives the model, and registry misuse.

use std::fmt;

/// A failure to report to the model: the loop turns it into an error result whose text is the
/// message, so the model can adapt.
///
/// Any `std::error::Error` converts into it with `?`; build one from a message with
/// [`ToolError::new`]. It is
/// deliberately not an `Error` itself (like `anyhow::Error`), so that conversion stays blanket.
pub struct ToolError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ToolError {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            source: None,
        }
    }

    /// The message the model sees.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error this one was converted from, if any.
    pub fn source(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("ToolError");
        debug.field("message", &self.message);
        if let Some(source) = &self.source {
            debug.field("source", source);
        }
        debug.finish()
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(err: E) -> Self {
        ToolError {
            message: err.to_string(),
            source: Some(Box::new(err)),
        }
    }
}

impl From<ToolError> for Box<dyn std::error::Error + Send + Sync + 'static> {
    fn from(err: ToolError) -> Self {
        err.message.into()
    }
}

/// A misuse of [`ToolRegistry`](crate::ToolRegistry).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two `#[tool]` definitions linked into one program share a name.
    #[error("two tools are named `{name}`: {first} and {second}")]
    DuplicateName {
        /// The shared name.
        name: String,
        /// Where the first definition is (`module::fn (file:line)`).
        first: String,
        /// Where the second definition is.
        second: String,
    },
    /// A tool takes `State<T>` and no `T` was given (see
    /// [`ToolRegistry::check_state`](crate::ToolRegistry::check_state)).
    #[error(
        "the tool `{tool}` takes `State<{type_name}>`, but no `{type_name}` was given: add it with \
         `with_state(..)` (on the registry or the agent context) before the tools run"
    )]
    MissingState {
        /// The tool's name.
        tool: String,
        /// The state type.
        type_name: String,
    },
    /// A name asked for is not registered.
    #[error("no tool named `{name}` is registered{suggestion}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// ` (did you mean `x`?)` when a registered name is close, else empty.
        suggestion: String,
    },
    /// [`ToolRegistry::discover_nonempty`](crate::ToolRegistry::discover_nonempty) found no
    /// `#[tool]` linked into the program.
    #[error(
        "no `#[tool]` is linked into this program. A crate that only defines tools must be \
         named by the final binary, or the linker drops it: add `use my_tools as _;` (your \
         tools crate's name) to main.rs or lib.rs. Tools built at run time are added with \
         `register` instead"
    )]
    NoToolsLinked,
    /// A tool built at run time ([`FnTool`](crate::FnTool)) was given a bad name, description
    /// or parameters schema.
    #[error("tool `{name}` cannot be built: {reason}")]
    InvalidTool {
        /// The tool's name, as given.
        name: String,
        /// What is wrong and what is expected.
        reason: String,
    },
}
