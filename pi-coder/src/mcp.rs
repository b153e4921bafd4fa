//! External MCP servers for `pi`: `--mcp NAME=COMMAND` options and the `mcpServers` files other
//! MCP clients read. Their tools join the built-in ones, named `NAME__tool`. Signing in to
//! OAuth-protected servers (a browser, a loopback redirect, tokens in a private file) and
//! answering a server's questions on the terminal happen here too.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::join_all;
use pi_mcp::{
    AuthorizationPrompt, AuthorizationReason, AuthorizeError, Authorizer, CredentialStore,
    ElicitationHandler, ElicitationKind, ElicitationRequest, ElicitationResponse,
    FileCredentialStore, InMemoryCredentialStore, LoopbackAuthorizer, McpClient, McpConfig,
    McpServerConfig, McpToolList, OAuthConfig,
};
use pi_tool::{BoxFuture, ToolRegistry};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, BufReader, Lines};
use tokio::sync::Mutex;

/// The user's file, under the home directory: trusted like the command line.
pub const USER_CONFIG_FILE: &str = ".pi/agent/mcp.json";

/// The project's files, in the working directory, in the order they are read (a later file's
/// server replaces an earlier one of the same name). `.mcp.json` is Claude Code's project file.
pub const PROJECT_CONFIG_FILES: [&str; 2] = [".mcp.json", ".pi/mcp.json"];

/// Where signed-in MCP servers' OAuth tokens are kept, in pi's agent directory (mode 0600).
pub const OAUTH_TOKENS_FILE: &str = "mcp-oauth.json";

/// Past this many MCP tools (all servers together), their schemas are deferred: the model finds
/// them with `tool_search` instead of reading every schema in every request.
/// `--mcp-tools-direct` sends them all.
pub const DEFER_MCP_TOOLS_PAST: usize = 30;

/// The servers `pi` should start, split by how far they are trusted.
#[derive(Debug, Default)]
pub struct McpServers {
    /// From the user's file and `--mcp` options: started without asking.
    pub trusted: McpConfig,
    /// From the project's files: a cloned repository can name any command here, so these need
    /// the user's consent (`--yes`, or a question on the terminal).
    pub project: McpConfig,
    /// The project files that were read, for the question.
    pub project_files: Vec<PathBuf>,
}

impl McpServers {
    /// Reads the user's file (when `home` is known), the project's files in `cwd`, then the
    /// `--mcp` options (which win over both). A file that does not exist is skipped; one that
    /// cannot be read or parsed is an error naming it.
    pub fn read(home: Option<&Path>, cwd: &Path, options: &[String]) -> Result<Self, String> {
        let mut servers = McpServers::default();
        servers.read_files(home, cwd)?;
        servers.add_options(options)?;
        Ok(servers)
    }

    /// Only the `--mcp` options (`--no-mcp-config`).
    pub fn from_options(options: &[String]) -> Result<Self, String> {
        let mut servers = McpServers::default();
        servers.add_options(options)?;
        Ok(servers)
    }

    fn read_files(&mut self, home: Option<&Path>, cwd: &Path) -> Result<(), String> {
        let servers = self;
        if let Some(home) = home {
            let path = home.join(USER_CONFIG_FILE);
            if let Some(config) = read_file(&path)? {
                servers.trusted.merge(config);
            }
        }
        for name in PROJECT_CONFIG_FILES {
            let path = cwd.join(name);
            if let Some(config) = read_file(&path)? {
                servers.project.merge(config);
                servers.project_files.push(path);
            }
        }
        Ok(())
    }

    fn add_options(&mut self, options: &[String]) -> Result<(), String> {
        let servers = self;
        for option in options {
            let (name, server) =
                McpServerConfig::from_option(option).map_err(|err| format!("pi: --mcp: {err}"))?;
            servers.project.servers.remove(&name);
            servers.trusted.servers.insert(name, server);
        }
        // A trusted definition of the same name wins over the project's.
        for name in servers.trusted.servers.keys() {
            servers.project.servers.remove(name);
        }
        Ok(())
    }

    /// How the project's servers are described when asking: `name: command args` per line.
    pub fn describe_project(&self) -> String {
        self.project
            .servers
            .iter()
            .map(|(name, server)| format!("  {name}: {}", describe(server)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn read_file(path: &Path) -> Result<Option<McpConfig>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("pi: {}: {err}", path.display())),
    };
    McpConfig::from_json(&text)
        .map(Some)
        .map_err(|err| format!("pi: {}: {err}", path.display()))
}

/// The command line or URL as the file wrote it (`${VAR}`s unexpanded: no secret is shown).
fn describe(server: &McpServerConfig) -> String {
    server.describe()
}

/// What every MCP client `pi` makes is given.
#[derive(Clone)]
pub struct ClientSetup {
    /// Signs in to OAuth-protected HTTP servers; without one a 401 leaves the server out with
    /// the server's challenge in the message.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Where tokens are kept.
    pub store: Arc<dyn CredentialStore>,
    /// Answers servers' questions during tool calls; without one they are declined.
    pub elicitation: Option<Arc<dyn ElicitationHandler>>,
}

impl Default for ClientSetup {
    fn default() -> Self {
        ClientSetup {
            authorizer: None,
            store: Arc::new(InMemoryCredentialStore::new()),
            elicitation: None,
        }
    }
}

impl std::fmt::Debug for ClientSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSetup")
            .field("signs_in", &self.authorizer.is_some())
            .field("asks", &self.elicitation.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientSetup {
    /// `pi` on a terminal: sign-ins (when `config` has HTTP servers) print the authorization
    /// page's URL and try to open it in a browser, the redirect comes back to a listener on
    /// 127.0.0.1, tokens go to `tokens_file`; servers' questions are asked on `input` when there
    /// is one (a terminal, not --print).
    pub fn for_terminal<R>(
        config: &McpConfig,
        tokens_file: PathBuf,
        input: Option<Arc<Mutex<Lines<BufReader<R>>>>>,
        mut warn: impl FnMut(String),
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let http = config
            .servers
            .values()
            .any(|server| matches!(server, McpServerConfig::Http { .. }));
        let authorizer = match http.then(|| LoopbackAuthorizer::bind(0, show_sign_in_page)) {
            None => None,
            Some(Ok(authorizer)) => Some(Arc::new(authorizer) as Arc<dyn Authorizer>),
            Some(Err(err)) => {
                warn(format!(
                    "pi: cannot listen on 127.0.0.1 for sign-ins ({err}); OAuth-protected MCP servers will be left out"
                ));
                None
            }
        };
        ClientSetup {
            authorizer,
            store: Arc::new(FileCredentialStore::new(tokens_file)),
            elicitation: input.map(|input| {
                Arc::new(TerminalQuestions::new(input, |text: &str| {
                    eprint!("{text}");
                    let _ = std::io::stderr().flush();
                })) as Arc<dyn ElicitationHandler>
            }),
        }
    }
}

/// A sign-in's page: printed on stderr, and opened in the browser when one can be started.
fn show_sign_in_page(prompt: &AuthorizationPrompt) -> Result<(), AuthorizeError> {
    let why = match prompt.reason {
        AuthorizationReason::MoreScopes => format!(
            "asks for more access ({})",
            if prompt.scopes.is_empty() {
                "more scopes".to_owned()
            } else {
                prompt.scopes.join(" ")
            }
        ),
        _ => "asks you to sign in".to_owned(),
    };
    let at = prompt
        .issuer
        .as_deref()
        .map(|issuer| format!(" at {issuer}"))
        .unwrap_or_default();
    eprintln!(
        "pi: MCP server {} {why}{at}. Open this page to continue:\n  {}",
        prompt.server, prompt.url
    );
    if !open_in_browser(&prompt.url) {
        eprintln!("  (no browser could be started: open the page yourself)");
    }
    Ok(())
}

/// Starts `$BROWSER`, else the desktop's opener (`open` on macOS, `xdg-open` elsewhere), on
/// `url`; whether one started.
fn open_in_browser(url: &str) -> bool {
    let opener = std::env::var_os("BROWSER").unwrap_or_else(|| {
        if cfg!(target_os = "macos") {
            "open".into()
        } else {
            "xdg-open".into()
        }
    });
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// Asks a server's questions on the terminal: the message, then each field of the form (an
/// empty line leaves it out: its default, if any, is used), or a URL to open.
pub struct TerminalQuestions<R> {
    input: Arc<Mutex<Lines<BufReader<R>>>>,
    say: Box<dyn Fn(&str) + Send + Sync>,
}

/// How often a form whose answers do not fit is asked again before it is declined.
const FORM_TRIES: usize = 3;

impl<R: AsyncRead + Unpin + Send + 'static> TerminalQuestions<R> {
    /// Reads answers from `input` (shared with the prompts and approvals) and writes questions
    /// with `say`.
    pub fn new(
        input: Arc<Mutex<Lines<BufReader<R>>>>,
        say: impl Fn(&str) + Send + Sync + 'static,
    ) -> Self {
        TerminalQuestions {
            input,
            say: Box::new(say),
        }
    }

    async fn ask(&self, request: ElicitationRequest) -> ElicitationResponse {
        let mut lines = self.input.lock().await;
        let mut read = async |question: &str| -> Option<String> {
            (self.say)(question);
            lines.next_line().await.ok().flatten()
        };
        (self.say)(&format!("\n{} asks: {}\n", request.server, request.message));
        match &request.kind {
            ElicitationKind::Url { url } => {
                (self.say)(&format!("  It wants you to open {url}\n"));
                match read("  Open it? [y]es / [n]o / [c]ancel: ")
                    .await
                    .as_deref()
                    .map(choice)
                {
                    Some(Choice::Yes) => {
                        if !open_in_browser(url) {
                            (self.say)("  (no browser could be started: open the page yourself)\n");
                        }
                        let _ = read("  Press Enter when you are done there. ").await;
                        ElicitationResponse::Accept(Value::Null)
                    }
                    Some(Choice::No) => ElicitationResponse::Decline,
                    _ => ElicitationResponse::Cancel,
                }
            }
            ElicitationKind::Form { schema } => {
                match read("  Answer? [y]es / [n]o / [c]ancel: ")
                    .await
                    .as_deref()
                    .map(choice)
                {
                    Some(Choice::Yes) => {}
                    Some(Choice::No) => return ElicitationResponse::Decline,
                    _ => return ElicitationResponse::Cancel,
                }
                let empty = Map::new();
                let properties = schema["properties"].as_object().unwrap_or(&empty);
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for _ in 0..FORM_TRIES {
                    let mut content = Map::new();
                    for (name, property) in properties {
                        let question =
                            field_question(name, property, required.contains(&name.as_str()));
                        let Some(line) = read(&question).await else {
                            return ElicitationResponse::Cancel;
                        };
                        if let Some(value) = field_value(property, line.trim()) {
                            content.insert(name.clone(), value);
                        }
                    }
                    match request.complete(Value::Object(content)) {
                        Ok(content) => return ElicitationResponse::Accept(content),
                        Err(problem) => {
                            (self.say)(&format!("  That does not fit: {problem}\n  Once more:\n"))
                        }
                    }
                }
                (self.say)("  Declined: the answers did not fit the form.\n");
                ElicitationResponse::Decline
            }
            _ => ElicitationResponse::Decline,
        }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> ElicitationHandler for TerminalQuestions<R> {
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationResponse> {
        Box::pin(self.ask(request))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    Yes,
    No,
    Cancel,
}

fn choice(line: &str) -> Choice {
    match line.trim().to_lowercase().as_str() {
        "y" | "yes" => Choice::Yes,
        "n" | "no" => Choice::No,
        _ => Choice::Cancel,
    }
}

/// `  Age (your age in years; a number, default 36): `
fn field_question(name: &str, property: &Value, required: bool) -> String {
    let label = property["title"].as_str().unwrap_or(name);
    let mut hints = Vec::new();
    if let Some(description) = property["description"].as_str() {
        hints.push(description.to_owned());
    }
    let choices = choices(property);
    match property["type"].as_str() {
        _ if !choices.is_empty() => {
            let names: Vec<&str> = choices.iter().map(|(_, shown)| shown.as_str()).collect();
            let one = if property["type"] == "array" {
                "some of"
            } else {
                "one of"
            };
            hints.push(format!("{one}: {}", names.join(", ")));
        }
        Some("boolean") => hints.push("yes or no".to_owned()),
        Some("integer") => hints.push("a whole number".to_owned()),
        Some("number") => hints.push("a number".to_owned()),
        _ => {}
    }
    if let Some(default) = property.get("default") {
        let shown = match default {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        hints.push(format!("default {shown}"));
    } else if required {
        hints.push("required".to_owned());
    }
    if hints.is_empty() {
        format!("  {label}: ")
    } else {
        format!("  {label} ({}): ", hints.join("; "))
    }
}

/// The values a field may take: `(value, as shown)`, from `enum` or titled `oneOf`/`anyOf`
/// (also of an array's items). The terminal interface asks with the same choices.
pub(crate) fn choices(property: &Value) -> Vec<(String, String)> {
    let of = if property["type"] == "array" {
        &property["items"]
    } else {
        property
    };
    if let Some(values) = of["enum"].as_array() {
        return values
            .iter()
            .filter_map(Value::as_str)
            .map(|value| (value.to_owned(), value.to_owned()))
            .collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = of[key].as_array() {
            return options
                .iter()
                .filter_map(|option| {
                    let value = option["const"].as_str()?;
                    let shown = option["title"]
                        .as_str()
                        .map_or_else(|| value.to_owned(), |title| format!("{title} ({value})"));
                    Some((value.to_owned(), shown))
                })
                .collect();
        }
    }
    Vec::new()
}

/// What a typed line means for a field; `None` for an empty line (left out).
fn field_value(property: &Value, line: &str) -> Option<Value> {
    if line.is_empty() {
        return None;
    }
    let choices = choices(property);
    // A choice may be typed as its value or as its title.
    let pick = |typed: &str| -> String {
        choices
            .iter()
            .find(|(value, shown)| {
                typed.eq_ignore_ascii_case(value)
                    || shown.to_lowercase().starts_with(&typed.to_lowercase())
            })
            .map_or_else(|| typed.to_owned(), |(value, _)| value.clone())
    };
    Some(match property["type"].as_str() {
        Some("boolean") => match line.to_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => Value::String(line.to_owned()),
        },
        Some("array") => Value::Array(
            line.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| Value::String(pick(item)))
                .collect(),
        ),
        // Numbers stay text: the form's schema makes them numbers (or says what is wrong).
        _ => Value::String(pick(line)),
    })
}

/// The connected servers: their tools, and a way to notice that a server's list changed.
#[derive(Debug, Default)]
pub struct McpTools {
    clients: Vec<McpClient>,
    watches: Vec<tokio::sync::watch::Receiver<McpToolList>>,
    /// Send every MCP schema, however many tools there are (`--mcp-tools-direct`).
    direct: bool,
}

impl McpTools {
    /// Connects to every server at once (a slow `npx` server does not hold up the others),
    /// without sign-ins or questions ([`connect_with`](Self::connect_with) has them). A server
    /// that cannot be reached is reported through `warn` and left out: pi still starts.
    pub async fn connect(config: &McpConfig, warn: impl FnMut(String)) -> Self {
        Self::connect_with(config, &ClientSetup::default(), warn).await
    }

    /// [`connect`](Self::connect) with `setup`'s sign-ins (HTTP servers) and questions.
    pub async fn connect_with(
        config: &McpConfig,
        setup: &ClientSetup,
        mut warn: impl FnMut(String),
    ) -> Self {
        let connecting = config.servers.iter().map(|(name, server)| async move {
            let mut builder = server.builder().prefix(name);
            if let (McpServerConfig::Http { .. }, Some(authorizer)) = (server, &setup.authorizer) {
                builder = builder.oauth(
                    OAuthConfig::new(Arc::clone(authorizer))
                        .client_name("pi")
                        .shared_credential_store(Arc::clone(&setup.store)),
                );
            }
            if let Some(questions) = &setup.elicitation {
                builder = builder.shared_elicitation(Arc::clone(questions));
            }
            let client = builder.connect().await;
            (name, client)
        });
        let mut tools = McpTools::default();
        for (name, client) in join_all(connecting).await {
            match client {
                Ok(client) => {
                    tools.watches.push(client.watch_tools());
                    tools.clients.push(client);
                }
                Err(err) => warn(format!("pi: MCP server \"{name}\" left out: {err}")),
            }
        }
        tools
    }

    /// The connected servers.
    pub fn clients(&self) -> &[McpClient] {
        &self.clients
    }

    /// Sends every MCP tool's schema with every request, however many there are (by default
    /// they are deferred past [`DEFER_MCP_TOOLS_PAST`]).
    pub fn send_directly(&mut self, direct: bool) {
        self.direct = direct;
    }

    /// Adds every server's current tools to `registry`; a name that is already taken (a
    /// built-in tool) keeps its tool, and the MCP tool is reported through `warn`. Past
    /// [`DEFER_MCP_TOOLS_PAST`] tools (unless [`send_directly`](Self::send_directly)) they are
    /// deferred.
    pub fn add_to(&self, registry: &mut ToolRegistry, warn: impl FnMut(String)) {
        let tools = self.clients.iter().flat_map(McpClient::tools).collect();
        let defer_past = (!self.direct).then_some(DEFER_MCP_TOOLS_PAST);
        register(registry, tools, defer_past, warn);
    }

    /// Whether a server's tool list changed since the last call (then build the registry again
    /// with [`add_to`](Self::add_to)).
    pub fn changed(&mut self) -> bool {
        let mut changed = false;
        for watch in &mut self.watches {
            if watch.has_changed().unwrap_or(false) {
                watch.mark_unchanged();
                changed = true;
            }
        }
        changed
    }
}

/// Registers MCP `tools` (deferred when there are more than `defer_past`), leaving out those
/// whose name is taken.
fn register(
    registry: &mut ToolRegistry,
    tools: Vec<Arc<dyn pi_tool::AgentTool>>,
    defer_past: Option<usize>,
    mut warn: impl FnMut(String),
) {
    let defer = defer_past.is_some_and(|limit| tools.len() > limit);
    for tool in tools {
        let name = tool.spec().name.clone();
        if registry.contains(&name) {
            warn(format!(
                "pi: MCP tool {name} left out: a tool of that name already exists"
            ));
        } else if defer {
            registry.register_arc(pi_tool::Deferred::wrap(tool));
        } else {
            registry.register_arc(tool);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::AsyncBufReadExt;

    type Script = Arc<Mutex<Lines<BufReader<std::io::Cursor<Vec<u8>>>>>>;

    /// The terminal's input as a script, and what was written to it.
    fn terminal(
        typed: &str,
    ) -> (
        TerminalQuestions<std::io::Cursor<Vec<u8>>>,
        Arc<std::sync::Mutex<String>>,
    ) {
        let input: Script = Arc::new(Mutex::new(
            BufReader::new(std::io::Cursor::new(typed.as_bytes().to_vec())).lines(),
        ));
        let shown = Arc::new(std::sync::Mutex::new(String::new()));
        let sink = Arc::clone(&shown);
        let questions = TerminalQuestions::new(input, move |text: &str| {
            sink.lock().unwrap().push_str(text);
        });
        (questions, shown)
    }

    fn form() -> ElicitationRequest {
        ElicitationRequest::new(
            "MCP server \"crm\"",
            "Who are you?",
            ElicitationKind::Form {
                schema: json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "title": "Name"},
                        "age": {"type": "integer", "title": "Age", "default": 36},
                        "verified": {"type": "boolean"},
                        "plan": {"type": "string", "oneOf": [{"const": "p1", "title": "Free"}, {"const": "p2", "title": "Team"}]},
                        "tools": {"type": "array", "items": {"type": "string", "enum": ["Guitar", "Drums", "Piano"]}}
                    },
                    "required": ["name"]
                }),
            },
        )
    }

    #[tokio::test]
    async fn a_form_is_asked_field_by_field_and_left_out_fields_take_their_defaults() {
        let (questions, shown) = terminal("y\nGrace\n\nyes\nteam\nguitar, Drums\n");
        let answer = questions.elicit(form()).await;
        assert_eq!(
            answer,
            ElicitationResponse::Accept(json!({
                "name": "Grace", "verified": true, "plan": "p2", "tools": ["Guitar", "Drums"], "age": 36
            }))
        );
        let shown = shown.lock().unwrap().clone();
        for question in [
            "MCP server \"crm\" asks: Who are you?",
            "  Answer? [y]es / [n]o / [c]ancel: ",
            "  Name (required): ",
            "  Age (a whole number; default 36): ",
            "  verified (yes or no): ",
            "  plan (one of: Free (p1), Team (p2)): ",
            "  tools (some of: Guitar, Drums, Piano): ",
        ] {
            assert!(shown.contains(question), "{question:?} not in {shown}");
        }
    }

    #[tokio::test]
    async fn answers_that_do_not_fit_are_asked_again() {
        // No name the first time, a wrong age the second, then a fit.
        let (questions, shown) = terminal("y\n\n\n\n\n\nAda\nold\n\n\n\nAda\n40\n\n\n\n");
        assert_eq!(
            questions.elicit(form()).await,
            ElicitationResponse::Accept(json!({"name": "Ada", "age": 40}))
        );
        let shown = shown.lock().unwrap().clone();
        assert_eq!(shown.matches("That does not fit").count(), 2, "{shown}");
        assert!(shown.contains("name: missing required property"), "{shown}");
    }

    #[tokio::test]
    async fn no_declines_and_an_empty_or_closed_terminal_cancels() {
        assert_eq!(
            terminal("n\n").0.elicit(form()).await,
            ElicitationResponse::Decline
        );
        assert_eq!(
            terminal("").0.elicit(form()).await,
            ElicitationResponse::Cancel
        );
        assert_eq!(
            terminal("y\nGrace\n").0.elicit(form()).await,
            ElicitationResponse::Cancel
        );
        let url = ElicitationRequest::new(
            "MCP server \"pay\"",
            "Confirm the payment",
            ElicitationKind::Url {
                url: "https://pay.example/confirm".into(),
            },
        );
        let (questions, shown) = terminal("n\n");
        assert_eq!(
            questions.elicit(url.clone()).await,
            ElicitationResponse::Decline
        );
        assert!(
            shown
                .lock()
                .unwrap()
                .contains("It wants you to open https://pay.example/confirm")
        );
        assert_eq!(
            terminal("c\n").0.elicit(url).await,
            ElicitationResponse::Cancel
        );
    }

    fn tools(count: usize) -> Vec<Arc<dyn pi_tool::AgentTool>> {
        (0..count)
            .map(|i| {
                let tool = pi_tool::tool_fn(
                    format!("srv__tool_{i}"),
                    "A server tool.",
                    json!({"type": "object"}),
                    |_, _| async { "ok" },
                )
                .unwrap();
                Arc::new(tool) as Arc<dyn pi_tool::AgentTool>
            })
            .collect()
    }

    #[test]
    fn mcp_tools_are_deferred_past_the_threshold_unless_sent_directly() {
        let mut few = ToolRegistry::new();
        register(
            &mut few,
            tools(DEFER_MCP_TOOLS_PAST),
            Some(DEFER_MCP_TOOLS_PAST),
            |_| {},
        );
        assert!(few.tools().all(|tool| !tool.deferred()));
        let mut many = ToolRegistry::new();
        register(
            &mut many,
            tools(DEFER_MCP_TOOLS_PAST + 1),
            Some(DEFER_MCP_TOOLS_PAST),
            |_| {},
        );
        assert_eq!(many.len(), DEFER_MCP_TOOLS_PAST + 1);
        assert!(many.tools().all(|tool| tool.deferred()));
        let mut direct = ToolRegistry::new();
        register(&mut direct, tools(DEFER_MCP_TOOLS_PAST + 1), None, |_| {});
        assert!(direct.tools().all(|tool| !tool.deferred()));
        // A taken name keeps its tool, deferred or not.
        let mut taken = ToolRegistry::new().with(
            pi_tool::tool_fn(
                "srv__tool_0",
                "Built in.",
                json!({"type": "object"}),
                |_, _| async { "" },
            )
            .unwrap(),
        );
        let mut warnings = Vec::new();
        register(&mut taken, tools(40), Some(DEFER_MCP_TOOLS_PAST), |w| {
            warnings.push(w)
        });
        assert!(!taken.get("srv__tool_0").unwrap().deferred());
        assert_eq!(warnings.len(), 1);
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn files_and_options_merge_with_trust_kept_apart() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        write(
            &home.path().join(USER_CONFIG_FILE),
            r#"{"mcpServers": {"mine": {"command": "my-server"}, "shared": {"command": "user-version"}}}"#,
        );
        write(
            &project.path().join(".mcp.json"),
            r#"{"mcpServers": {"repo": {"command": "repo-server", "args": ["--x"]}, "shared": {"command": "project-version"}}}"#,
        );
        write(
            &project.path().join(".pi/mcp.json"),
            r#"{"servers": {"web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
        );
        let servers = McpServers::read(
            Some(home.path()),
            project.path(),
            &["cli=python3 server.py".to_owned()],
        )
        .unwrap();
        let trusted: Vec<&str> = servers.trusted.servers.keys().map(String::as_str).collect();
        let untrusted: Vec<&str> = servers.project.servers.keys().map(String::as_str).collect();
        assert_eq!(trusted, ["cli", "mine", "shared"]);
        assert_eq!(untrusted, ["repo", "web"]);
        assert!(matches!(
            &servers.trusted.servers["shared"],
            McpServerConfig::Stdio { command, .. } if command == "user-version"
        ));
        assert_eq!(servers.project_files.len(), 2);
        assert_eq!(
            servers.describe_project(),
            "  repo: repo-server --x\n  web: http://127.0.0.1:9/mcp"
        );
    }

    #[test]
    fn missing_files_are_fine_and_broken_ones_are_named() {
        let project = tempfile::tempdir().unwrap();
        let none = McpServers::read(None, project.path(), &[]).unwrap();
        assert!(none.trusted.servers.is_empty() && none.project.servers.is_empty());

        write(
            &project.path().join(".mcp.json"),
            "{\"mcpServers\": {\"x\": {}}}",
        );
        let err = McpServers::read(None, project.path(), &[]).unwrap_err();
        assert!(err.contains(".mcp.json: server \"x\""), "{err}");

        let err = McpServers::read(None, tempfile::tempdir().unwrap().path(), &["nope".into()])
            .unwrap_err();
        assert_eq!(err, "pi: --mcp: expected NAME=COMMAND, got \"nope\"");
    }

    #[tokio::test]
    async fn a_server_that_cannot_start_is_left_out_with_a_warning() {
        let (_, server) = McpServerConfig::from_option("gone=/nonexistent/server").unwrap();
        let config = McpConfig {
            servers: [("gone".to_owned(), server)].into(),
        };
        let mut warnings = Vec::new();
        let tools = McpTools::connect(&config, |warning| warnings.push(warning)).await;
        assert!(tools.clients().is_empty());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(
                "pi: MCP server \"gone\" left out: could not start MCP server `/nonexistent/server`"
            ),
            "{}",
            warnings[0]
        );
    }
}
