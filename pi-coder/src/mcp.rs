//! External MCP servers for `pi`: `--mcp NAME=COMMAND` options and the `mcpServers` files other
//! MCP clients read. Their tools join the built-in ones, named `NAME__tool`.

use std::path::{Path, PathBuf};

use futures_util::future::join_all;
use pi_mcp::{McpClient, McpConfig, McpServerConfig, McpToolList};
use pi_tool::ToolRegistry;

/// The user's file, under the home directory: trusted like the command line.
pub const USER_CONFIG_FILE: &str = ".pi/agent/mcp.json";

/// The project's files, in the working directory, in the order they are read (a later file's
/// server replaces an earlier one of the same name). `.mcp.json` is Claude Code's project file.
pub const PROJECT_CONFIG_FILES: [&str; 2] = [".mcp.json", ".pi/mcp.json"];

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

fn describe(server: &McpServerConfig) -> String {
    match server {
        McpServerConfig::Stdio { command, args, .. } => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        McpServerConfig::Http { url, .. } => url.clone(),
    }
}

/// The connected servers: their tools, and a way to notice that a server's list changed.
#[derive(Debug, Default)]
pub struct McpTools {
    clients: Vec<McpClient>,
    watches: Vec<tokio::sync::watch::Receiver<McpToolList>>,
}

impl McpTools {
    /// Connects to every server at once (a slow `npx` server does not hold up the others). A
    /// server that cannot be reached is reported through `warn` and left out: pi still starts.
    pub async fn connect(config: &McpConfig, mut warn: impl FnMut(String)) -> Self {
        let connecting = config.servers.iter().map(|(name, server)| async move {
            let client = server.builder().prefix(name).connect().await;
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

    /// Adds every server's current tools to `registry`; a name that is already taken (a
    /// built-in tool) keeps its tool, and the MCP tool is reported through `warn`.
    pub fn add_to(&self, registry: &mut ToolRegistry, mut warn: impl FnMut(String)) {
        for client in &self.clients {
            for tool in client.tools() {
                let name = tool.spec().name.clone();
                if registry.contains(&name) {
                    warn(format!(
                        "pi: MCP tool {name} left out: a tool of that name already exists"
                    ));
                } else {
                    registry.register_arc(tool);
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
