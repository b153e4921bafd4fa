//! Why a durable step gave no value.

/// A journaled step that ended without a value for the loop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// Restate recorded a terminal failure for the step (a rejected awakeable, a failed call,
    /// or the invocation was cancelled: code 409).
    #[error("{message}")]
    Terminal {
        /// The HTTP-style status code Restate recorded (409: cancelled).
        code: u16,
        /// The failure's message.
        message: String,
    },
    /// The journaled value could not be read back as the expected type.
    #[error("a journaled step's value could not be decoded: {0}")]
    Decode(String),
    /// The handler that runs the steps is gone (the invocation ended or is being retried).
    #[error("the durable handler running this step is gone")]
    Detached,
}

impl StepError {
    /// Whether Restate cancelled the invocation (abort).
    pub fn is_cancelled(&self) -> bool {
        matches!(self, StepError::Terminal { code: 409, .. })
    }
}

impl From<restate_sdk::errors::TerminalError> for StepError {
    fn from(error: restate_sdk::errors::TerminalError) -> Self {
        StepError::Terminal {
            code: error.code(),
            message: error.message().to_owned(),
        }
    }
}
