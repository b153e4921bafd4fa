//! `pi mcp serve`: the seven coding tools served to MCP clients (Claude Desktop, VS Code,
//! Cursor), annotated for what they do: read, grep, find and ls read-only; bash, edit and write
//! not. The client asks its user before running a tool, as its own settings say.
//!
//! Over HTTP nobody gets in without the bearer token (`$PI_MCP_TOKEN`, else a new random one
//! printed once), only loopback addresses are served unless `--allow-remote` says otherwise,
//! and browsers are kept out by the `Origin` check unless `--allow-origin` lets one in. On a
//! Unix socket (mode 0600) the file's permissions keep others out.

use std::net::SocketAddr;
use std::path::Path;

use pi_mcp::{McpServer, generate_token};

use crate::cli::{McpServeArgs, working_dir};
use crate::{Workspace, coding_tools};

/// The variable that sets the bearer token.
const TOKEN_VARIABLE: &str = "PI_MCP_TOKEN";

/// A token shorter than this is refused: it could be guessed over the network.
const MIN_TOKEN_CHARS: usize = 16;

/// Serves until the client disconnects (stdio), or the process is interrupted (HTTP, socket).
pub(crate) async fn serve(args: &McpServeArgs) -> Result<(), String> {
    let cwd = working_dir(args.cwd.as_deref())?;
    // MCP clients show images to their models; `read` returns them.
    // The clients' models run commands here too: the same sandbox as `pi`'s by default.
    let sandbox = args
        .sandbox
        .unwrap_or(pi_sandbox::SandboxMode::WorkspaceWrite);
    let workspace = Workspace::new(&cwd)
        .confined(args.confine)
        .sandboxed(sandbox)
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
        ))
        .with_allowed_origins(args.allow_origin.iter().cloned());
    let served = match (&args.http, &args.unix) {
        (Some(addr), _) => serve_http(server, addr, args, &cwd).await,
        (None, Some(path)) => serve_unix(server, path, &cwd).await,
        (None, None) => server.serve_stdio().await.map_err(|err| err.to_string()),
    };
    served.map_err(|err| format!("pi: mcp serve: {err}"))
}

/// Where the token came from, which decides what is printed.
enum Token {
    FromEnvironment(String),
    Generated(String),
}

/// `$PI_MCP_TOKEN` when set (checked), else a new one.
fn token() -> Result<Token, String> {
    match std::env::var(TOKEN_VARIABLE) {
        Ok(token) => check_token(&token).map(|()| Token::FromEnvironment(token)),
        Err(std::env::VarError::NotPresent) => Ok(Token::Generated(generate_token())),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(format!("{TOKEN_VARIABLE} is not valid UTF-8"))
        }
    }
}

/// A token must fit in a header as it is (visible ASCII, no spaces) and be long enough.
fn check_token(token: &str) -> Result<(), String> {
    if !token.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err(format!(
            "{TOKEN_VARIABLE} must be visible ASCII characters without spaces (it is sent as \
             `Authorization: Bearer TOKEN`)"
        ));
    }
    if token.len() < MIN_TOKEN_CHARS {
        return Err(format!(
            "{TOKEN_VARIABLE} has {} characters; use at least {MIN_TOKEN_CHARS} (e.g. the output \
             of `openssl rand -hex 32`), or unset it to get a random one",
            token.len()
        ));
    }
    Ok(())
}

async fn serve_http(
    server: McpServer,
    addr: &str,
    args: &McpServeArgs,
    cwd: &Path,
) -> Result<(), String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|err| format!("cannot resolve {addr}: {err}"))?
        .collect();
    let remote = addrs.iter().find(|a| !a.ip().to_canonical().is_loopback());
    if let Some(remote) = remote {
        if args.no_auth {
            return Err(format!(
                "--no-auth is for loopback addresses only: on {addr} ({}) anyone who can reach \
                 this machine could run bash as you",
                remote.ip()
            ));
        }
        if !args.allow_remote {
            return Err(format!(
                "refusing to listen on {addr} ({}): it is not a loopback address, so anyone who \
                 can reach this machine could try to run bash as you. Pass --allow-remote to \
                 serve there anyway (every request then needs the token; put TLS in front)",
                remote.ip()
            ));
        }
    }
    let token = if args.no_auth { None } else { Some(token()?) };
    let mut server = match &token {
        Some(Token::FromEnvironment(token) | Token::Generated(token)) => {
            server.with_bearer_token(token.clone())
        }
        None => server.without_auth(),
    };
    // Behind --allow-remote the token is what keeps others out; the Host list (a defence of
    // unauthenticated local servers against DNS rebinding) would only turn away a LAN name.
    if remote.is_some() {
        server = server
            .allow_remote()
            .with_allowed_hosts(args.allow_host.iter().cloned());
    } else if !args.allow_host.is_empty() {
        let loopback = ["localhost", "127.0.0.1", "::1"].map(str::to_owned);
        server =
            server.with_allowed_hosts(loopback.into_iter().chain(args.allow_host.iter().cloned()));
    }
    let listener = tokio::net::TcpListener::bind(addrs.as_slice())
        .await
        .map_err(|err| format!("cannot listen on {addr}: {err}"))?;
    let bound = listener.local_addr().map_err(|err| err.to_string())?;
    eprintln!(
        "pi: serving MCP at http://{bound}/mcp (tools in {})",
        cwd.display()
    );
    match &token {
        Some(Token::Generated(token)) => eprintln!(
            "pi: every request needs the header `Authorization: Bearer {token}` \
             (a new token at each start; set {TOKEN_VARIABLE} to choose one)"
        ),
        Some(Token::FromEnvironment(_)) => eprintln!(
            "pi: every request needs the header `Authorization: Bearer ${TOKEN_VARIABLE}` \
             (the token from {TOKEN_VARIABLE})"
        ),
        None => eprintln!(
            "pi: warning: --no-auth: every program and every user of this machine can run these \
             tools (bash included) as you; web pages cannot (Host and Origin are checked)"
        ),
    }
    tokio::select! {
        served = server.serve_http_on(listener) => served.map_err(|err| err.to_string()),
        () = interrupted() => Ok(()),
    }
}

async fn serve_unix(server: McpServer, path: &Path, cwd: &Path) -> Result<(), String> {
    let server = match std::env::var_os(TOKEN_VARIABLE) {
        Some(_) => match token()? {
            Token::FromEnvironment(token) | Token::Generated(token) => {
                server.with_bearer_token(token)
            }
        },
        None => server,
    };
    let serving = server.serve_unix(path);
    // `serve_unix` binds on its first poll; say where once it had the chance to fail.
    tokio::pin!(serving);
    tokio::select! {
        biased;
        served = &mut serving => return served.map_err(|err| err.to_string()),
        () = std::future::ready(()) => {}
    }
    eprintln!(
        "pi: serving MCP on the Unix socket {} (mode 0600: only you can connect; clients use \
         http://localhost/mcp over it, e.g. curl --unix-socket {0}) (tools in {})",
        path.display(),
        cwd.display()
    );
    if std::env::var_os(TOKEN_VARIABLE).is_some() {
        eprintln!("pi: every request needs the header `Authorization: Bearer ${TOKEN_VARIABLE}`");
    }
    // Dropping the server on Ctrl-C or SIGTERM removes the socket file.
    tokio::select! {
        served = serving => served.map_err(|err| err.to_string()),
        () = interrupted() => Ok(()),
    }
}

/// Ctrl-C or SIGTERM: the end of serving.
async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        },
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked() {
        assert!(check_token(&"a".repeat(16)).is_ok());
        assert!(check_token("0123456789abcdef0123").is_ok());
        let short = check_token("s3cret").unwrap_err();
        assert!(
            short.starts_with("PI_MCP_TOKEN has 6 characters; use at least 16"),
            "{short}"
        );
        for bad in [
            "with a space in it 123",
            "tab\there-0123456789",
            "ünicode-0123456789",
        ] {
            assert!(
                check_token(bad)
                    .unwrap_err()
                    .starts_with("PI_MCP_TOKEN must be visible ASCII"),
                "{bad:?}"
            );
        }
    }
}
