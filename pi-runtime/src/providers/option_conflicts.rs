//! Option combinations an API refuses outright, and what the providers send instead: the
//! request-level half of the compatibility report (the tool-level half is
//! [`CompatibilityReport`](super::CompatibilityReport)).

use std::fmt;

use crate::model::{StreamOptions, ThinkingLevel, ToolChoice};

/// An option combination an API would refuse, resolved by the provider before sending.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionConflict {
    /// Anthropic refuses thinking together with a forced tool choice (`any` or `tool`):
    /// "Thinking may not be enabled when tool_choice forces tool use". The request is sent
    /// without thinking, keeping the forced choice.
    AnthropicThinkingWithForcedTool,
}

impl OptionConflict {
    /// The conflicts of `options` for the API `api` (a provider's `API` constant) when the
    /// request carries tools. Empty when the options go out as they are.
    ///
    /// ```
    /// use pi_runtime::providers::{AnthropicMessages, OptionConflict};
    /// use pi_runtime::{StreamOptions, ThinkingLevel, ToolChoice};
    ///
    /// let mut options = StreamOptions::default();
    /// options.thinking = Some(ThinkingLevel::High);
    /// options.tool_choice = Some(ToolChoice::Required);
    /// let conflicts = OptionConflict::of(AnthropicMessages::API, &options, true);
    /// assert_eq!(conflicts, [OptionConflict::AnthropicThinkingWithForcedTool]);
    /// assert!(conflicts[0].to_string().starts_with("Anthropic refuses thinking"));
    /// ```
    pub fn of(api: &str, options: &StreamOptions, has_tools: bool) -> Vec<OptionConflict> {
        let mut conflicts = Vec::new();
        let thinking = options
            .thinking
            .is_some_and(|level| level != ThinkingLevel::Off);
        let forced = matches!(
            options.tool_choice,
            Some(ToolChoice::Required | ToolChoice::Tool(_))
        );
        if api == super::AnthropicMessages::API && has_tools && thinking && forced {
            conflicts.push(OptionConflict::AnthropicThinkingWithForcedTool);
        }
        conflicts
    }
}

impl fmt::Display for OptionConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OptionConflict::AnthropicThinkingWithForcedTool => {
                "Anthropic refuses thinking together with a forced tool choice (`any` or `tool`); \
                 the request is sent without thinking, keeping the forced choice"
            }
        })
    }
}
