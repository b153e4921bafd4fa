//! A served tool whose `State<T>` the registry does not hold is reported when serving starts,
//! naming the tool and the type, on every transport, before anything is bound or read: not
//! when a client first calls it.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use pi_mcp::{McpServer, ServeError};
use pi_tool::{State, ToolRegistry, tool};
use tokio::net::TcpListener;

/// What `lookup` reads its rows from.
struct Inventory(Vec<String>);

/// Look an item up in the inventory.
#[tool]
async fn lookup(item: String, inventory: State<Inventory>) -> String {
    inventory.0.contains(&item).to_string()
}

/// Say hello (needs no state).
#[tool]
async fn hello() -> &'static str {
    "hello"
}

fn without_state() -> McpServer {
    McpServer::new(ToolRegistry::new().with(HelloTool).with(LookupTool)).without_auth()
}

/// The error names the tool and the type, and says how to give it.
fn assert_names_lookup_and_inventory(result: Result<(), ServeError>) {
    let error = result.expect_err("the missing state is reported");
    match &error {
        ServeError::MissingState { tool, type_name } => {
            assert_eq!(tool, "lookup");
            assert!(type_name.ends_with("Inventory"), "{type_name}");
        }
        other => panic!("expected MissingState, got {other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains("`lookup`") && text.contains("Inventory") && text.contains("with_state"),
        "{text}"
    );
}

/// Awaits a serve future that must end at once (bounded, so a server that serves anyway
/// fails the test instead of hanging it).
async fn ended<F: Future<Output = Result<(), ServeError>>>(serving: F) -> Result<(), ServeError> {
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serving did not start: it ended with an error")
}

#[test]
fn check_reports_the_tool_and_its_type_and_passes_once_the_state_is_given() {
    assert_names_lookup_and_inventory(without_state().check());
    let registry = ToolRegistry::new()
        .with(HelloTool)
        .with(LookupTool)
        .with_state(Inventory(vec!["apple".into()]));
    assert!(McpServer::new(registry).check().is_ok());
}

#[tokio::test]
async fn http_refuses_to_serve_and_accepts_no_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    assert_names_lookup_and_inventory(ended(without_state().serve_http_on(listener)).await);
    // The listener was dropped unserved: nobody is accepted.
    assert!(tokio::net::TcpStream::connect(address).await.is_err());

    assert_names_lookup_and_inventory(ended(without_state().serve_http("127.0.0.1:0")).await);
}

#[tokio::test]
async fn stdio_style_streams_refuse_before_the_handshake() {
    // The client side stays open and silent: a server that waited for `initialize` would hang
    // (and the timeout fail the test) instead of reporting the missing state.
    let (_client, server_side) = tokio::io::duplex(1024);
    let (reader, writer) = tokio::io::split(server_side);
    assert_names_lookup_and_inventory(ended(without_state().serve_io(reader, writer)).await);
}

#[cfg(unix)]
#[tokio::test]
async fn a_unix_socket_is_not_created() {
    let dir = std::env::temp_dir().join(format!("pi-mcp-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join("mcp.sock");
    assert_names_lookup_and_inventory(ended(without_state().serve_unix(&path)).await);
    assert!(!path.exists(), "no socket file is left");
    let _ = std::fs::remove_dir_all(&dir);
}
