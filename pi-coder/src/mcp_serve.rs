//! `pi mcp serve`: the seven coding tools served to MCP clients (Claude Desktop, VS Code,
//! Cursor), annotated for what they do: read, grep, find and ls read-only; bash, edit and write
//! not. The client asks its user before running a tool, as its own settings say.

use pi_mcp::McpServer;

use crate::cli::{McpServeArgs, working_dir};
use crate::{Workspace, coding_tools};

/// Serves until the client disconnects (stdio) or the process ends (HTTP).
pub(crate) async fn serve(args: &McpServeArgs) -> Result<(), String> {
    let cwd = working_dir(args.cwd.as_deref())?;
    // MCP clients show images to their models; `read` returns them.
    let workspace = Workspace::new(&cwd)
        .confined(args.confine)
        .with_images_supported(true);
    let server = McpServer::new(coding_tools(workspace))
        .with_name("pi")
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_instructions(format!(
            "pi's coding tools, working in {}{}.",
            cwd.display(),
            if args.confine {
                " (file tools confined to it)"
            } else {
                ""
            }
        ));
    match &args.http {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr.as_str())
                .await
                .map_err(|err| format!("pi: mcp serve: cannot listen on {addr}: {err}"))?;
            let bound = listener
                .local_addr()
                .map_err(|err| format!("pi: mcp serve: {err}"))?;
            eprintln!(
                "pi: serving MCP at http://{bound}/mcp (tools in {})",
                cwd.display()
            );
            server.serve_http_on(listener).await
        }
        None => server.serve_stdio().await,
    }
    .map_err(|err| format!("pi: mcp serve: {err}"))
}
