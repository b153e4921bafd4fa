//! Secrets kept out of a confined command's environment: the model providers' keys, anything
//! named like a key, token, secret or password, and what the user adds; minus what they allow.

/// The variables hidden by default: the model providers' keys by name, then patterns (`*` at
/// either end matches any text) for the usual names of keys, tokens, secrets and passwords.
pub const DEFAULT_HIDDEN_ENV: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "*_API_KEY",
    "*_APIKEY",
    "*_TOKEN",
    "*_SECRET",
    "*_SECRET_KEY",
    "*_PRIVATE_KEY",
    "*PASSWORD*",
    "*_CREDENTIALS",
];

/// Which variables a confined command does not get.
#[derive(Clone, Debug)]
pub(crate) struct EnvFilter {
    hidden: Vec<String>,
    allowed: Vec<String>,
}

impl Default for EnvFilter {
    fn default() -> Self {
        EnvFilter {
            hidden: DEFAULT_HIDDEN_ENV.iter().map(|&s| s.to_owned()).collect(),
            allowed: Vec::new(),
        }
    }
}

impl EnvFilter {
    pub(crate) fn hide(&mut self, pattern: String) {
        self.hidden.push(pattern);
    }

    pub(crate) fn allow(&mut self, pattern: String) {
        self.allowed.push(pattern);
    }

    /// Whether `name` is hidden (and not allowed). Names compare case-insensitively, as a
    /// user writing `openai_api_key` means the same variable's name.
    pub(crate) fn hides(&self, name: &str) -> bool {
        let upper = name.to_ascii_uppercase();
        let matches = |pattern: &String| matches_pattern(&pattern.to_ascii_uppercase(), &upper);
        self.hidden.iter().any(matches) && !self.allowed.iter().any(matches)
    }

    /// The variables of this process's environment a command must not get.
    pub(crate) fn hidden_now(&self) -> Vec<std::ffi::OsString> {
        std::env::vars_os()
            .filter(|(name, _)| name.to_str().is_none_or(|name| self.hides(name)))
            .map(|(name, _)| name)
            .collect()
    }
}

/// `pattern` against `name`: `*` at the start, the end or both matches any text there.
fn matches_pattern(pattern: &str, name: &str) -> bool {
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(rest), _) if rest.ends_with('*') => name.contains(&rest[..rest.len() - 1]),
        (Some(suffix), _) => name.ends_with(suffix),
        (None, Some(prefix)) => name.starts_with(prefix),
        (None, None) => name == pattern,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_at_either_end() {
        assert!(matches_pattern("*_TOKEN", "GH_TOKEN"));
        assert!(!matches_pattern("*_TOKEN", "TOKENS"));
        assert!(matches_pattern("AWS_*", "AWS_REGION"));
        assert!(matches_pattern("*PASSWORD*", "DB_PASSWORD_FILE"));
        assert!(matches_pattern("PATH", "PATH"));
        assert!(!matches_pattern("PATH", "MANPATH"));
    }

    #[test]
    fn allowed_beats_hidden_and_case_does_not_matter() {
        let mut filter = EnvFilter::default();
        assert!(filter.hides("anthropic_api_key"));
        filter.allow("anthropic_api_key".into());
        assert!(!filter.hides("ANTHROPIC_API_KEY"));
        assert!(!filter.hides("HOME"));
        filter.hide("HOME".into());
        assert!(filter.hides("HOME"));
    }
}
