//! The `mcpServers` configuration files that Claude Desktop, Cursor, Claude Code and VS Code
//! read, so one file serves them and us.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::builder::Target;
use super::expand::{ExpandError, expand, process_env};
use super::{McpClientBuilder, McpClientError};
use crate::McpClient;

/// A server entry's `oauth` settings: what its authorization server knows this client as.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpOAuthSettings {
    /// `clientId`: a client id registered beforehand (no dynamic registration then).
    pub client_id: Option<String>,
    /// `clientSecret`: its secret, for a confidential client (best given as `${VAR}`).
    pub client_secret: Option<String>,
    /// `clientMetadataUrl`: the HTTPS URL of this client's metadata document, used as its client
    /// id where the authorization server accepts that.
    pub client_metadata_url: Option<String>,
    /// `scopes`: the scopes to ask for (a list, or one space-separated string).
    pub scopes: Vec<String>,
    /// `dpop`: `true` asks for DPoP-bound tokens ([`OAuthConfig::dpop`](crate::OAuthConfig)).
    pub dpop: bool,
}

impl std::fmt::Debug for McpOAuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuthSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("dpop", &self.dpop)
            .finish()
    }
}

/// How to reach one MCP server.
///
/// Values are kept as the file wrote them: `${VAR}` and `${VAR:-default}` (and VS Code's
/// `${env:VAR}`) in the command, arguments, environment, working directory, URL, header values
/// and `oauth` settings are expanded from the environment by [`builder`](Self::builder), when
/// connecting, so that what a secret expands to appears in no message. `Debug` shows header
/// and environment names, not their values.
#[derive(Clone, PartialEq, Eq)]
pub enum McpServerConfig {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (added to ours).
        env: BTreeMap<String, String>,
        /// Its working directory (ours when `None`).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint, e.g. `https://example.com/mcp`.
        url: String,
        /// Headers sent with every request (`Authorization`, API keys).
        headers: BTreeMap<String, String>,
        /// How to sign in when the server asks (OAuth), beyond what the application configures.
        oauth: Option<McpOAuthSettings>,
    },
}

impl std::fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpServerConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            McpServerConfig::Http {
                url,
                headers,
                oauth,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .field("oauth", oauth)
                .finish(),
        }
    }
}

/// A configuration file was not in a format we read.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct McpConfigError {
    message: String,
}

impl McpConfigError {
    fn new(message: impl Into<String>) -> Self {
        McpConfigError {
            message: message.into(),
        }
    }
}

/// Named MCP servers, as read from `mcpServers` files and `--mcp` options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpConfig {
    /// The servers by name (the name becomes their tools' prefix in `pi`).
    pub servers: BTreeMap<String, McpServerConfig>,
}

impl McpConfig {
    /// Reads a configuration file's text. Accepted shapes:
    ///
    /// - Claude Desktop / Cursor / Claude Code: `{"mcpServers": {"name": {"command": "npx",
    ///   "args": [..], "env": {..}}}}` and `{"mcpServers": {"name": {"url": "https://..",
    ///   "headers": {..}}}}` (an optional `"type": "stdio" | "http" | "streamable-http"`);
    /// - VS Code (`.vscode/mcp.json`): `{"servers": {"name": {"type": "stdio" | "http", ..}}}`.
    ///
    /// An entry with `"disabled": true` is skipped. Anything else (an SSE server, an entry with
    /// neither `command` nor `url`, a wrong type) is an error naming the entry.
    pub fn from_json(text: &str) -> Result<Self, McpConfigError> {
        let root: Value = serde_json::from_str(text)
            .map_err(|err| McpConfigError::new(format!("not valid JSON: {err}")))?;
        let Value::Object(root) = root else {
            return Err(McpConfigError::new("expected a JSON object at the top"));
        };
        let (key, entries) = match (root.get("mcpServers"), root.get("servers")) {
            (Some(entries), _) => ("mcpServers", entries),
            (None, Some(entries)) => ("servers", entries),
            (None, None) => {
                return Err(McpConfigError::new(
                    "expected an \"mcpServers\" (or VS Code's \"servers\") object",
                ));
            }
        };
        let Value::Object(entries) = entries else {
            return Err(McpConfigError::new(format!("\"{key}\" must be an object")));
        };
        let mut servers = BTreeMap::new();
        for (name, entry) in entries {
            let Value::Object(entry) = entry else {
                return Err(McpConfigError::new(format!(
                    "server \"{name}\": expected an object"
                )));
            };
            if entry.get("disabled") == Some(&Value::Bool(true)) {
                continue;
            }
            let server = server_entry(entry)
                .map_err(|problem| McpConfigError::new(format!("server \"{name}\": {problem}")))?;
            servers.insert(name.clone(), server);
        }
        Ok(McpConfig { servers })
    }

    /// Adds `other`'s servers; a server of the same name is replaced by `other`'s.
    pub fn merge(&mut self, other: McpConfig) {
        self.servers.extend(other.servers);
    }
}

impl McpServerConfig {
    /// A `--mcp NAME=COMMAND` option: `NAME` and a command line split like a POSIX shell
    /// would (quotes and backslashes; no variables or globs). A `COMMAND` that starts with
    /// `http://` or `https://` is an HTTP server.
    pub fn from_option(option: &str) -> Result<(String, Self), McpConfigError> {
        let Some((name, command)) = option.split_once('=') else {
            return Err(McpConfigError::new(format!(
                "expected NAME=COMMAND, got \"{option}\""
            )));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(McpConfigError::new(format!(
                "the server name before '=' is empty in \"{option}\""
            )));
        }
        let command = command.trim();
        if command.starts_with("http://") || command.starts_with("https://") {
            return Ok((
                name.to_owned(),
                McpServerConfig::Http {
                    url: command.to_owned(),
                    headers: BTreeMap::new(),
                    oauth: None,
                },
            ));
        }
        let words = shlex::split(command).ok_or_else(|| {
            McpConfigError::new(format!(
                "server \"{name}\": unbalanced quotes in \"{command}\""
            ))
        })?;
        let mut words = words.into_iter();
        let Some(program) = words.next() else {
            return Err(McpConfigError::new(format!(
                "server \"{name}\": the command is empty"
            )));
        };
        Ok((
            name.to_owned(),
            McpServerConfig::Stdio {
                command: program,
                args: words.collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        ))
    }

    /// A client builder for this server (add a prefix, timeouts, then `connect`), with
    /// `${VAR}`s expanded from the process environment. A variable that is not set (and has no
    /// `:-default`) makes `connect` fail with an error naming it and the server.
    pub fn builder(&self) -> McpClientBuilder {
        self.builder_with_env(process_env)
    }

    /// Like [`builder`](Self::builder), with `${VAR}`s expanded by `lookup` instead of from the
    /// process environment (a secrets manager, a test).
    pub fn builder_with_env(&self, lookup: impl Fn(&str) -> Option<String>) -> McpClientBuilder {
        let shown = self.describe();
        match self.expanded(&lookup) {
            Ok(builder) => builder.shown_as(shown),
            Err((field, problem)) => McpClientBuilder::failed(
                Target::Http(shown.clone()),
                shown.clone(),
                McpClientError::Config {
                    server: shown,
                    reason: format!("{field}: {problem}"),
                },
            ),
        }
    }

    /// The command line or URL as the configuration wrote it (placeholders unexpanded).
    pub fn describe(&self) -> String {
        match self {
            McpServerConfig::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            McpServerConfig::Http { url, .. } => url.clone(),
        }
    }

    /// The builder with every value expanded; `Err` names the field that could not be.
    fn expanded(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<McpClientBuilder, (String, ExpandError)> {
        let one = |field: &str, text: &str| {
            expand(text, lookup).map_err(|problem| (field.to_owned(), problem))
        };
        match self {
            McpServerConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut process = tokio::process::Command::new(one("command", command)?);
                for arg in args {
                    process.arg(one("args", arg)?);
                }
                for (name, value) in env {
                    process.env(name, one(&format!("env.{name}"), value)?);
                }
                if let Some(cwd) = cwd {
                    process.current_dir(one("cwd", &cwd.to_string_lossy())?);
                }
                Ok(McpClient::stdio(process))
            }
            McpServerConfig::Http {
                url,
                headers,
                oauth,
            } => {
                let mut builder = McpClient::http(one("url", url)?);
                for (name, value) in headers {
                    builder = builder.header(name, one(&format!("headers.{name}"), value)?);
                }
                let oauth = match oauth {
                    None => None,
                    Some(settings) => {
                        let optional = |field: &str, value: &Option<String>| {
                            value.as_deref().map(|value| one(field, value)).transpose()
                        };
                        Some(McpOAuthSettings {
                            client_id: optional("oauth.clientId", &settings.client_id)?,
                            client_secret: optional("oauth.clientSecret", &settings.client_secret)?,
                            client_metadata_url: optional(
                                "oauth.clientMetadataUrl",
                                &settings.client_metadata_url,
                            )?,
                            scopes: settings
                                .scopes
                                .iter()
                                .map(|scope| one("oauth.scopes", scope))
                                .collect::<Result<_, _>>()?,
                            dpop: settings.dpop,
                        })
                    }
                };
                Ok(builder.oauth_settings(oauth))
            }
        }
    }

    /// The entry's `oauth` settings (HTTP servers), unexpanded.
    pub fn oauth_settings(&self) -> Option<&McpOAuthSettings> {
        match self {
            McpServerConfig::Http { oauth, .. } => oauth.as_ref(),
            McpServerConfig::Stdio { .. } => None,
        }
    }
}

fn server_entry(entry: &Map<String, Value>) -> Result<McpServerConfig, String> {
    let kind = match entry.get("type") {
        None => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(other) => return Err(format!("\"type\" must be a string, got {other}")),
    };
    let has_url = entry.contains_key("url");
    match kind {
        Some("stdio") => stdio_entry(entry),
        Some("http" | "streamable-http" | "streamableHttp") => http_entry(entry),
        Some("sse") => Err(
            "the old HTTP+SSE transport is not supported; use the server's streamable HTTP endpoint (\"type\": \"http\")"
                .to_owned(),
        ),
        Some(other) => Err(format!(
            "unknown \"type\" \"{other}\" (expected \"stdio\" or \"http\")"
        )),
        None if entry.contains_key("command") => stdio_entry(entry),
        None if has_url => http_entry(entry),
        None => Err("expected \"command\" (a stdio server) or \"url\" (an HTTP server)".to_owned()),
    }
}

fn stdio_entry(entry: &Map<String, Value>) -> Result<McpServerConfig, String> {
    let command = match entry.get("command") {
        Some(Value::String(command)) if !command.trim().is_empty() => command.clone(),
        Some(Value::String(_)) => return Err("\"command\" is empty".to_owned()),
        Some(other) => return Err(format!("\"command\" must be a string, got {other}")),
        None => return Err("a stdio server needs \"command\"".to_owned()),
    };
    let args = match entry.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(args)) => args
            .iter()
            .map(|arg| match arg {
                Value::String(arg) => Ok(arg.clone()),
                other => Err(format!("\"args\" must hold strings, got {other}")),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("\"args\" must be an array, got {other}")),
    };
    let cwd = match entry.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(cwd)) => Some(PathBuf::from(cwd)),
        Some(other) => return Err(format!("\"cwd\" must be a string, got {other}")),
    };
    Ok(McpServerConfig::Stdio {
        command,
        args,
        env: string_map(entry, "env")?,
        cwd,
    })
}

fn http_entry(entry: &Map<String, Value>) -> Result<McpServerConfig, String> {
    let url = match entry.get("url") {
        Some(Value::String(url)) if url.starts_with("http://") || url.starts_with("https://") => {
            url.clone()
        }
        Some(Value::String(url)) => {
            return Err(format!(
                "\"url\" must start with http:// or https://, got \"{url}\""
            ));
        }
        Some(other) => return Err(format!("\"url\" must be a string, got {other}")),
        None => return Err("an HTTP server needs \"url\"".to_owned()),
    };
    Ok(McpServerConfig::Http {
        url,
        headers: string_map(entry, "headers")?,
        oauth: oauth_entry(entry)?,
    })
}

/// `oauth`: `{"clientId", "clientSecret", "clientMetadataUrl", "scopes", "dpop"}` (other keys, such as
/// Claude Code's `callbackPort`, are ignored).
fn oauth_entry(entry: &Map<String, Value>) -> Result<Option<McpOAuthSettings>, String> {
    let oauth = match entry.get("oauth") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(oauth)) => oauth,
        Some(other) => return Err(format!("\"oauth\" must be an object, got {other}")),
    };
    let text = |key: &str| match oauth.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.clone())),
        Some(other) => Err(format!("\"oauth.{key}\" must be a string, got {other}")),
    };
    let scopes = match oauth.get("scopes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(scopes)) => scopes.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(scopes)) => scopes
            .iter()
            .map(|scope| match scope {
                Value::String(scope) => Ok(scope.clone()),
                other => Err(format!("\"oauth.scopes\" must hold strings, got {other}")),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                "\"oauth.scopes\" must be a list of strings, got {other}"
            ));
        }
    };
    let dpop = match oauth.get("dpop") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(dpop)) => *dpop,
        Some(other) => return Err(format!("\"oauth.dpop\" must be true or false, got {other}")),
    };
    let settings = McpOAuthSettings {
        client_id: text("clientId")?,
        client_secret: text("clientSecret")?,
        client_metadata_url: text("clientMetadataUrl")?,
        scopes,
        dpop,
    };
    if settings.client_secret.is_some() && settings.client_id.is_none() {
        return Err("\"oauth.clientSecret\" needs \"oauth.clientId\"".to_owned());
    }
    Ok(Some(settings))
}

/// `env` / `headers`: an object of strings.
fn string_map(entry: &Map<String, Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(name, value)| match value {
                Value::String(value) => Ok((name.clone(), value.clone())),
                other => Err(format!("\"{key}.{name}\" must be a string, got {other}")),
            })
            .collect(),
        Some(other) => Err(format!("\"{key}\" must be an object, got {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_desktop_and_cursor_files() {
        let config = McpConfig::from_json(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
                "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
                "off": {"command": "nope", "disabled": true}
            }}"#,
        )
        .unwrap();
        assert_eq!(config.servers.len(), 2);
        assert_eq!(
            config.servers["fs"],
            McpServerConfig::Stdio {
                command: "npx".into(),
                args: vec![
                    "-y".into(),
                    "@modelcontextprotocol/server-filesystem".into(),
                    "/tmp".into()
                ],
                env: BTreeMap::from([("DEBUG".into(), "1".into())]),
                cwd: None,
            }
        );
        assert_eq!(
            config.servers["remote"],
            McpServerConfig::Http {
                url: "https://example.com/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer x".into())]),
                oauth: None,
            }
        );
    }

    #[test]
    fn an_oauth_entry_may_ask_for_dpop() {
        let config = McpConfig::from_json(
            r#"{"mcpServers": {
                "bound": {"url": "https://example.com/mcp", "oauth": {"clientId": "app", "dpop": true}},
                "plain": {"url": "https://example.com/mcp", "oauth": {"clientId": "app"}}
            }}"#,
        )
        .unwrap();
        assert!(config.servers["bound"].oauth_settings().unwrap().dpop);
        assert!(!config.servers["plain"].oauth_settings().unwrap().dpop);
        let bad = McpConfig::from_json(
            r#"{"mcpServers": {"x": {"url": "https://example.com/mcp", "oauth": {"dpop": "yes"}}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            bad.contains("\"oauth.dpop\" must be true or false"),
            "{bad}"
        );
    }

    #[test]
    fn reads_vs_code_files() {
        let config = McpConfig::from_json(
            r#"{"servers": {
                "a": {"type": "stdio", "command": "node", "args": ["server.js"]},
                "b": {"type": "http", "url": "http://127.0.0.1:3000/mcp"}
            }, "inputs": []}"#,
        )
        .unwrap();
        assert!(matches!(config.servers["a"], McpServerConfig::Stdio { .. }));
        assert!(matches!(config.servers["b"], McpServerConfig::Http { .. }));
    }

    #[test]
    fn bad_entries_are_errors_that_name_the_entry() {
        for (text, expected) in [
            ("[]", "expected a JSON object at the top"),
            ("{}", "expected an \"mcpServers\""),
            (
                r#"{"mcpServers": {"x": {}}}"#,
                "server \"x\": expected \"command\"",
            ),
            (
                r#"{"mcpServers": {"x": {"command": 3}}}"#,
                "server \"x\": \"command\" must be a string, got 3",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "a", "args": [1]}}}"#,
                "\"args\" must hold strings",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "a", "env": {"K": 1}}}}"#,
                "\"env.K\" must be a string",
            ),
            (
                r#"{"mcpServers": {"x": {"type": "sse", "url": "http://h/sse"}}}"#,
                "HTTP+SSE transport is not supported",
            ),
            (
                r#"{"mcpServers": {"x": {"url": "ftp://h"}}}"#,
                "must start with http://",
            ),
            ("{not json", "not valid JSON"),
        ] {
            let err = McpConfig::from_json(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn later_files_replace_servers_of_the_same_name() {
        let mut user = McpConfig::from_json(
            r#"{"mcpServers": {"a": {"command": "one"}, "b": {"command": "b"}}}"#,
        )
        .unwrap();
        user.merge(McpConfig::from_json(r#"{"mcpServers": {"a": {"command": "two"}}}"#).unwrap());
        assert!(
            matches!(&user.servers["a"], McpServerConfig::Stdio { command, .. } if command == "two")
        );
        assert_eq!(user.servers.len(), 2);
    }

    #[test]
    fn command_line_options_split_like_a_shell() {
        let (name, server) =
            McpServerConfig::from_option("py=python3 -m 'my server' --flag").unwrap();
        assert_eq!(name, "py");
        assert_eq!(
            server,
            McpServerConfig::Stdio {
                command: "python3".into(),
                args: vec!["-m".into(), "my server".into(), "--flag".into()],
                env: BTreeMap::new(),
                cwd: None,
            }
        );
        let (_, server) = McpServerConfig::from_option("web=http://127.0.0.1:8000/mcp").unwrap();
        assert!(matches!(server, McpServerConfig::Http { .. }));
        for bad in ["noequals", "=cmd", "x=", "x='open"] {
            assert!(McpServerConfig::from_option(bad).is_err(), "{bad}");
        }
    }
}
