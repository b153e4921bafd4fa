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
    /// Anthropic refuses a sampling temperature together with thinking. The request is sent
    /// with thinking, without the temperature.
    AnthropicTemperatureWithThinking,
    /// The model takes no sampling parameters: Anthropic deprecated `temperature`, `top_p` and
    /// `top_k` from Claude Opus 4.7 and every model of generation 5 on (the API answers
    /// "`temperature` is deprecated for this model"), and its own SDK no longer defines them
    /// (`anthropic` 1.0 and later; only models that predate the change honour them). The
    /// request is sent without the temperature.
    AnthropicSamplingNotTakenByModel,
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
    ///
    /// This does not know the model: [`of_model`](OptionConflict::of_model) adds what depends on
    /// it (which Claude models take a temperature).
    pub fn of(api: &str, options: &StreamOptions, has_tools: bool) -> Vec<OptionConflict> {
        Self::conflicts(api, None, options, has_tools)
    }

    /// The conflicts of `options` for the model `model` of the API `api`: those of
    /// [`of`](OptionConflict::of), and the options the model itself no longer takes. This is
    /// what the providers resolve before sending.
    ///
    /// ```
    /// use pi_runtime::providers::{AnthropicMessages, OptionConflict};
    /// use pi_runtime::StreamOptions;
    ///
    /// let mut options = StreamOptions::default();
    /// options.temperature = Some(0.2);
    /// let api = AnthropicMessages::API;
    /// assert_eq!(
    ///     OptionConflict::of_model(api, "claude-opus-4-7", &options, true),
    ///     [OptionConflict::AnthropicSamplingNotTakenByModel]
    /// );
    /// // A model from before the change still takes it.
    /// assert!(OptionConflict::of_model(api, "claude-sonnet-4-5", &options, true).is_empty());
    /// ```
    pub fn of_model(
        api: &str,
        model: &str,
        options: &StreamOptions,
        has_tools: bool,
    ) -> Vec<OptionConflict> {
        Self::conflicts(api, Some(model), options, has_tools)
    }

    fn conflicts(
        api: &str,
        model: Option<&str>,
        options: &StreamOptions,
        has_tools: bool,
    ) -> Vec<OptionConflict> {
        let mut conflicts = Vec::new();
        if api != super::AnthropicMessages::API {
            return conflicts;
        }
        let mut thinking = options
            .thinking
            .is_some_and(|level| level != ThinkingLevel::Off);
        let forced = matches!(
            options.tool_choice,
            Some(
                ToolChoice::Required
                    | ToolChoice::Tool(_)
                    | ToolChoice::AllowedTools { required: true, .. }
            )
        );
        if has_tools && thinking && forced {
            conflicts.push(OptionConflict::AnthropicThinkingWithForcedTool);
            thinking = false;
        }
        if options.temperature.is_some() {
            if model.is_some_and(|model| !claude_takes_sampling(model)) {
                conflicts.push(OptionConflict::AnthropicSamplingNotTakenByModel);
            } else if thinking {
                conflicts.push(OptionConflict::AnthropicTemperatureWithThinking);
            }
        }
        conflicts
    }
}

/// Whether a model behind the Anthropic Messages API takes sampling parameters (`temperature`,
/// `top_p`, `top_k`). Claude models before the change do: Claude 1 to 3 (`claude-3-5-sonnet-..`),
/// and Opus, Sonnet and Haiku of generation 4 up to Opus 4.6. Opus 4.7 on, every model of
/// generation 5 on, and families without a version before them (`claude-mythos-preview`) do not.
/// An id that names no Claude model (another server speaking the Messages API) does. Ids with a
/// cloud's prefix or suffix (`anthropic.claude-opus-4-7`, `claude-opus-4-7@20260416`) read the
/// same.
pub(crate) fn claude_takes_sampling(model: &str) -> bool {
    let Some(start) = model.find("claude-") else {
        return true;
    };
    let mut parts = model[start + "claude-".len()..].split(['-', '.', '@', ':']);
    let family = parts.next().unwrap_or_default();
    if family.bytes().all(|b| b.is_ascii_digit()) && !family.is_empty() {
        // The old naming, version first: `claude-2.1`, `claude-3-5-sonnet-20241022`.
        return true;
    }
    // A version part has one or two digits; a date (`20251001`) is not one.
    let mut version = parts.map_while(|part| {
        (!part.is_empty() && part.len() <= 2)
            .then(|| part.parse::<u32>().ok())
            .flatten()
    });
    let (Some(major), minor) = (version.next(), version.next().unwrap_or(0)) else {
        return false;
    };
    match family {
        "opus" => major < 4 || (major == 4 && minor < 7),
        "sonnet" | "haiku" | "instant" => major < 5,
        _ => false,
    }
}

impl fmt::Display for OptionConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OptionConflict::AnthropicThinkingWithForcedTool => {
                "Anthropic refuses thinking together with a forced tool choice (`any` or `tool`); \
                 the request is sent without thinking, keeping the forced choice"
            }
            OptionConflict::AnthropicTemperatureWithThinking => {
                "Anthropic refuses a temperature together with thinking; the request is sent \
                 with thinking, without the temperature"
            }
            OptionConflict::AnthropicSamplingNotTakenByModel => {
                "this Claude model takes no sampling parameters (deprecated from Opus 4.7 and \
                 generation 5 on); the request is sent without the temperature"
            }
        })
    }
}
