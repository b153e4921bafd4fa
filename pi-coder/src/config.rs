//! pi's configuration files, read as pi 0.73.1 reads them: `settings.json` (the agent
//! directory's, then the project's `.pi/settings.json` over it) and `models.json` (custom
//! providers and models, overrides of the built-in ones).
//!
//! Both are read, never written: choosing a model or a thinking level here does not change the
//! user's defaults (pi saves them; see the README).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pi_sandbox::{SandboxMode, SandboxPolicy};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::compaction::CompactionSettings;

/// The parts of pi's `settings.json` this crate uses (`core/settings-manager.ts`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Settings {
    /// The provider of the default model.
    pub default_provider: Option<String>,
    /// The default model id.
    pub default_model: Option<String>,
    /// The default thinking level (`off` ... `xhigh`).
    pub default_thinking_level: Option<String>,
    /// Automatic compaction.
    pub compaction: Option<CompactionConfig>,
    /// Where sessions are saved and found (like `--session-dir`).
    pub session_dir: Option<String>,
    /// Model patterns for `--models` when it is not given.
    pub enabled_models: Option<Vec<String>>,
    /// The shell `bash` runs.
    pub shell_path: Option<String>,
    /// A line run before every `!` command of the user.
    pub shell_command_prefix: Option<String>,
    /// Say nothing at startup.
    pub quiet_startup: Option<bool>,
    /// The sandbox of `bash` commands (ours): a mode name, or `{mode, network, allowEnv,
    /// hideEnv}`. Read from the agent directory's settings only: a project cannot loosen it.
    pub sandbox: Option<SandboxSetting>,
}

/// `settings.json`'s `sandbox`: `"workspace-write"`, or an object.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SandboxSetting {
    /// Just the mode: `read-only`, `workspace-write`, `full-access` or `off`.
    Mode(String),
    /// The mode and what it lets through.
    Detailed(SandboxConfig),
}

/// `settings.json`'s `sandbox` object.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct SandboxConfig {
    /// The mode (default `workspace-write`).
    pub mode: Option<String>,
    /// Allow the network (default false).
    pub network: Option<bool>,
    /// Variables passed to commands even though they look like secrets (`GITHUB_TOKEN`).
    pub allow_env: Option<Vec<String>>,
    /// More variables (or `*` patterns) kept from commands (`DATABASE_URL`).
    pub hide_env: Option<Vec<String>>,
    /// More folders commands may write (in `workspace-write`).
    pub writable_roots: Option<Vec<String>>,
}

/// `settings.json`'s `compaction` object.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CompactionConfig {
    /// Compact automatically (default true).
    pub enabled: Option<bool>,
    /// Tokens kept free for the answer and the summary (default 16384).
    pub reserve_tokens: Option<u64>,
    /// Recent tokens kept verbatim (default 20000).
    pub keep_recent_tokens: Option<u64>,
}

impl Settings {
    /// The global settings of `agent_dir`, with the project's (`<cwd>/.pi/settings.json`)
    /// merged over them as pi merges them (nested objects key by key). A file that cannot be
    /// read or parsed is left out, and `warn` says why (pi warns and goes on too).
    pub fn load(agent_dir: &Path, cwd: &Path, mut warn: impl FnMut(String)) -> Settings {
        let mut merged = Map::new();
        for path in [
            agent_dir.join("settings.json"),
            cwd.join(".pi").join("settings.json"),
        ] {
            let Some(Value::Object(mut settings)) = read_json(&path, &mut warn) else {
                continue;
            };
            if path != agent_dir.join("settings.json") && settings.remove("sandbox").is_some() {
                warn(format!(
                    "{}: \"sandbox\" is ignored in a project's settings (a repository must not loosen it); set it in {} or with --sandbox",
                    path.display(),
                    agent_dir.join("settings.json").display()
                ));
            }
            for (key, value) in settings {
                match (merged.get_mut(&key), value) {
                    (Some(Value::Object(base)), Value::Object(over)) => base.extend(over),
                    (_, value) => {
                        merged.insert(key, value);
                    }
                }
            }
        }
        serde_json::from_value(Value::Object(merged)).unwrap_or_else(|err| {
            warn(format!("settings.json: {err}; using the defaults"));
            Settings::default()
        })
    }

    /// The sandbox for `bash`: `flag` (`--sandbox`) over the setting's mode, `workspace-write`
    /// by default; the agent directory kept read-only where it lies in a writable root.
    pub fn sandbox_policy(
        &self,
        flag: Option<SandboxMode>,
        cwd: &Path,
        agent_dir: &Path,
    ) -> Result<SandboxPolicy, String> {
        let config = match &self.sandbox {
            None => SandboxConfig::default(),
            Some(SandboxSetting::Mode(mode)) => SandboxConfig {
                mode: Some(mode.clone()),
                ..SandboxConfig::default()
            },
            Some(SandboxSetting::Detailed(config)) => config.clone(),
        };
        let setting = match config.mode.as_deref() {
            Some(name) => Some(SandboxMode::parse(name).ok_or_else(|| {
                format!(
                    "pi: settings.json: \"sandbox\": `{name}` is no sandbox mode (read-only, workspace-write, off)"
                )
            })?),
            None => None,
        };
        let mode = flag.or(setting).unwrap_or(SandboxMode::WorkspaceWrite);
        let mut policy = SandboxPolicy::new(mode, cwd)
            .with_network(config.network.unwrap_or(false))
            .with_read_only_path(agent_dir);
        for name in config.allow_env.unwrap_or_default() {
            policy = policy.with_allowed_env(name);
        }
        for name in config.hide_env.unwrap_or_default() {
            policy = policy.with_hidden_env(name);
        }
        for root in config.writable_roots.unwrap_or_default() {
            policy = policy.with_writable_root(root);
        }
        Ok(policy)
    }

    /// The compaction settings (pi's defaults where unset).
    pub fn compaction(&self) -> CompactionSettings {
        let config = self.compaction.clone().unwrap_or_default();
        let defaults = CompactionSettings::default();
        CompactionSettings {
            enabled: config.enabled.unwrap_or(defaults.enabled),
            reserve_tokens: config.reserve_tokens.unwrap_or(defaults.reserve_tokens),
            keep_recent_tokens: config
                .keep_recent_tokens
                .unwrap_or(defaults.keep_recent_tokens),
        }
    }
}

/// A JSON file, `None` when it does not exist; comments (`//`) and trailing commas are allowed
/// as pi allows them in `models.json`.
fn read_json(path: &Path, warn: &mut impl FnMut(String)) -> Option<Value> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            warn(format!("could not read {}: {err}", path.display()));
            return None;
        }
    };
    match serde_json::from_str(&strip_json_comments(&text)) {
        Ok(value) => Some(value),
        Err(err) => {
            warn(format!("{} is not valid JSON: {err}", path.display()));
            None
        }
    }
}

/// pi's `stripJsonComments`: `//` line comments and trailing commas removed, strings untouched.
fn strip_json_comments(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut chars = input.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '/' if chars.peek() == Some(&'/') => {
                for next in chars.by_ref() {
                    if next == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ',' => {
                // A trailing comma: only whitespace (and comments, already dropped) before `}`/`]`.
                let rest: String = chars.clone().collect();
                let trimmed = rest.trim_start();
                if !(trimmed.starts_with('}') || trimmed.starts_with(']')) {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// One provider of `models.json`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProviderConfig {
    /// Display name.
    pub name: Option<String>,
    /// The endpoint, for its models (or to move a built-in provider's).
    pub base_url: Option<String>,
    /// The key: an environment variable's name, a literal, or `!command` (its output).
    pub api_key: Option<String>,
    /// The wire API of its models (`openai-completions`, `anthropic-messages`, ...).
    pub api: Option<String>,
    /// Extra HTTP headers (values resolved like `api_key`).
    pub headers: Option<BTreeMap<String, String>>,
    /// Compatibility flags (pi's `compat`: `supportsStore`, `maxTokensField`, ...).
    pub compat: Option<Map<String, Value>>,
    /// Send `Authorization: Bearer <key>` as a header too.
    pub auth_header: Option<bool>,
    /// The provider's models.
    pub models: Option<Vec<ModelDefinition>>,
    /// Per-model changes to a built-in provider's models.
    pub model_overrides: Option<BTreeMap<String, Value>>,
}

/// One model of a `models.json` provider.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelDefinition {
    /// The model id sent to the provider.
    pub id: String,
    /// Display name (default: the id).
    pub name: Option<String>,
    /// Wire API (default: the provider's).
    pub api: Option<String>,
    /// Endpoint (default: the provider's).
    pub base_url: Option<String>,
    /// Whether it reasons (thinking levels apply; default false).
    pub reasoning: Option<bool>,
    /// What each thinking level is called for it (`null`: not supported).
    pub thinking_level_map: Option<Map<String, Value>>,
    /// `["text"]` or `["text", "image"]` (default text only).
    pub input: Option<Vec<String>>,
    /// US dollars per million tokens.
    pub cost: Option<ModelCost>,
    /// Context window in tokens (default 128000).
    pub context_window: Option<u64>,
    /// Output limit in tokens (default 16384).
    pub max_tokens: Option<u64>,
    /// Extra HTTP headers.
    pub headers: Option<BTreeMap<String, String>>,
    /// Compatibility flags over the provider's.
    pub compat: Option<Map<String, Value>>,
}

/// US dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelCost {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Cache writes.
    pub cache_write: f64,
}

/// pi's `models.json`.
#[derive(Clone, Debug, Default, Deserialize)]
#[non_exhaustive]
pub struct ModelsConfig {
    /// The providers by name.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
}

impl ModelsConfig {
    /// `<agent_dir>/models.json`, or an empty configuration when there is none. A file pi would
    /// refuse is an error saying why, as pi's (`Invalid models.json ...`), and its contents are
    /// ignored: pi then goes on with its built-in models, and so does this crate.
    pub fn load(agent_dir: &Path) -> Result<ModelsConfig, String> {
        let path = agent_dir.join("models.json");
        let mut problem = None;
        let Some(value) = read_json(&path, &mut |warning| problem = Some(warning)) else {
            return match problem {
                Some(problem) => Err(format!("Failed to parse models.json: {problem}")),
                None => Ok(ModelsConfig::default()),
            };
        };
        let config: ModelsConfig = serde_json::from_value(value).map_err(|err| {
            format!(
                "Invalid models.json schema: {err}\n\nFile: {}",
                path.display()
            )
        })?;
        config
            .validate()
            .map_err(|err| format!("{err}\n\nFile: {}", path.display()))?;
        Ok(config)
    }

    /// pi's `validateConfig`.
    fn validate(&self) -> Result<(), String> {
        for (name, provider) in &self.providers {
            let built_in = crate::models::BUILT_IN_PROVIDERS.contains(&name.as_str());
            let models = provider.models.as_deref().unwrap_or_default();
            let overrides = provider
                .model_overrides
                .as_ref()
                .is_some_and(|o| !o.is_empty());
            if models.is_empty() {
                if provider.base_url.is_none()
                    && provider.headers.is_none()
                    && provider.compat.is_none()
                    && !overrides
                {
                    return Err(format!(
                        "Provider {name}: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\"."
                    ));
                }
            } else if !built_in {
                if provider.base_url.is_none() {
                    return Err(format!(
                        "Provider {name}: \"baseUrl\" is required when defining custom models."
                    ));
                }
                if provider.api_key.is_none() {
                    return Err(format!(
                        "Provider {name}: \"apiKey\" is required when defining custom models."
                    ));
                }
            }
            for model in models {
                if model.id.is_empty() {
                    return Err(format!("Provider {name}: model missing \"id\""));
                }
                if provider.api.is_none() && model.api.is_none() && !built_in {
                    return Err(format!(
                        "Provider {name}, model {}: no \"api\" specified. Set at provider or model level.",
                        model.id
                    ));
                }
                if model.context_window == Some(0) {
                    return Err(format!(
                        "Provider {name}, model {}: invalid contextWindow",
                        model.id
                    ));
                }
                if model.max_tokens == Some(0) {
                    return Err(format!(
                        "Provider {name}, model {}: invalid maxTokens",
                        model.id
                    ));
                }
            }
        }
        Ok(())
    }
}

/// pi's `resolveConfigValue`: `!command` runs the command (its trimmed output; nothing when it
/// fails), else the environment variable of that name when set, else the text itself.
pub fn resolve_config_value(value: &str) -> Option<String> {
    if let Some(command) = value.strip_prefix('!') {
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !output.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        return (!text.is_empty()).then_some(text);
    }
    match std::env::var(value) {
        Ok(from_env) if !from_env.is_empty() => Some(from_env),
        _ => Some(value.to_owned()),
    }
}

/// Where pi's `.pi/SYSTEM.md` and `APPEND_SYSTEM.md` are for `cwd`: the project's first, else
/// the agent directory's (pi's `discoverSystemPromptFile`).
pub fn prompt_file(agent_dir: &Path, cwd: &Path, name: &str) -> Option<PathBuf> {
    [cwd.join(".pi").join(name), agent_dir.join(name)]
        .into_iter()
        .find(|path| path.exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_are_dropped_outside_strings() {
        let text = "{\n  // a comment\n  \"a\": \"x // not a comment\",\n  \"b\": [1, 2,],\n}\n";
        let value: Value = serde_json::from_str(&strip_json_comments(text)).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"a": "x // not a comment", "b": [1, 2]})
        );
    }

    #[test]
    fn only_the_agent_directory_sets_the_sandbox() {
        let agent = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(
            agent.path().join("settings.json"),
            r#"{"sandbox": {"mode": "read-only", "network": true, "allowEnv": ["GH_TOKEN"]}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(project.path().join(".pi")).unwrap();
        std::fs::write(
            project.path().join(".pi/settings.json"),
            r#"{"sandbox": "off"}"#,
        )
        .unwrap();
        let mut warnings = Vec::new();
        let settings = Settings::load(agent.path(), project.path(), |w| warnings.push(w));
        assert!(
            warnings[0].contains("\"sandbox\" is ignored"),
            "{warnings:?}"
        );
        let policy = settings
            .sandbox_policy(None, project.path(), agent.path())
            .unwrap();
        assert_eq!(policy.mode(), SandboxMode::ReadOnly);
        assert!(policy.network() && !policy.hides_env("GH_TOKEN"));
        // The flag wins over the setting; nothing set means workspace-write.
        let flagged = settings
            .sandbox_policy(Some(SandboxMode::FullAccess), project.path(), agent.path())
            .unwrap();
        assert_eq!(flagged.mode(), SandboxMode::FullAccess);
        let default = Settings::default()
            .sandbox_policy(None, project.path(), agent.path())
            .unwrap();
        assert_eq!(default.mode(), SandboxMode::WorkspaceWrite);
        assert!(!default.network());
    }

    #[test]
    fn project_settings_merge_over_the_global_ones_key_by_key() {
        let agent = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(
            agent.path().join("settings.json"),
            r#"{"defaultModel": "m1", "compaction": {"enabled": false, "reserveTokens": 100}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(project.path().join(".pi")).unwrap();
        std::fs::write(
            project.path().join(".pi/settings.json"),
            r#"{"compaction": {"reserveTokens": 200}}"#,
        )
        .unwrap();
        let settings = Settings::load(agent.path(), project.path(), |w| panic!("{w}"));
        assert_eq!(settings.default_model.as_deref(), Some("m1"));
        let compaction = settings.compaction();
        assert!(!compaction.enabled);
        assert_eq!(compaction.reserve_tokens, 200);
        assert_eq!(compaction.keep_recent_tokens, 20000);
    }

    #[test]
    fn config_values_come_from_commands_the_environment_or_as_written() {
        assert_eq!(
            resolve_config_value("!echo from-command").as_deref(),
            Some("from-command")
        );
        assert_eq!(resolve_config_value("!exit 3"), None);
        assert_eq!(
            resolve_config_value("LITERAL_KEY_THAT_IS_NO_VARIABLE").as_deref(),
            Some("LITERAL_KEY_THAT_IS_NO_VARIABLE")
        );
        assert_eq!(resolve_config_value("PATH"), std::env::var("PATH").ok());
    }
}
