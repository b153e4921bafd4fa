//! The server's tool list as our tools, and keeping it current after `tools/list_changed`.

use std::sync::{Arc, Weak};

use rmcp::model::ServerNotification;
use tokio::sync::{mpsc, watch};

use super::connection::Connection;
use super::naming::NameMapper;
use super::{McpClientError, McpTool, McpToolList};

/// `tools/list` (every page) as our tools. A tool whose input schema is not an object schema is
/// left out with a warning: no model provider would accept it.
pub(crate) async fn list_tools(
    connection: &Arc<Connection>,
    prefix: Option<&str>,
) -> Result<McpToolList, McpClientError> {
    let listed =
        connection
            .peer()
            .list_all_tools()
            .await
            .map_err(|err| McpClientError::ListTools {
                server: connection.label().to_owned(),
                reason: err.to_string(),
            })?;
    let mut names = NameMapper::new(prefix);
    let mut tools = Vec::with_capacity(listed.len());
    for tool in listed {
        let mcp_name = tool.name.to_string();
        let name = names.map(&mcp_name);
        match McpTool::from_mcp(tool, name, Arc::clone(connection)) {
            Ok(tool) => tools.push(Arc::new(tool)),
            Err(reason) => {
                tracing::warn!("{}: tool {mcp_name} left out: {reason}", connection.label())
            }
        }
    }
    Ok(tools.into())
}

/// Lists the tools again after each `tools/list_changed`, until the client is dropped (nobody
/// watches any more) or the session ends.
pub(crate) async fn refresh_on_change(
    connection: Weak<Connection>,
    mut list_changed: mpsc::Receiver<()>,
    tools: watch::Sender<McpToolList>,
    prefix: Option<String>,
) {
    loop {
        tokio::select! {
            () = tools.closed() => return,
            changed = list_changed.recv() => {
                if changed.is_none() {
                    return;
                }
            }
        }
        let Some(connection) = connection.upgrade() else {
            return;
        };
        // Bounded: a server that never answers must not keep the connection (and a stdio
        // server's process) alive through this task.
        let listed = tokio::time::timeout(
            connection.call_timeout(),
            list_tools(&connection, prefix.as_deref()),
        )
        .await;
        match listed {
            Ok(Ok(listed)) => {
                tools.send_replace(listed);
            }
            Ok(Err(err)) => tracing::warn!("{err}"),
            Err(_) => tracing::warn!(
                "{}: tools/list after a list change got no answer",
                connection.label()
            ),
        }
    }
}

/// On a 2026-07-28 session, list-changed notifications come only on a `subscriptions/listen`
/// stream the client opens; this forwards them to the refresher until the session ends.
pub(crate) async fn forward_list_changes(
    mut subscription: rmcp::service::Subscription,
    list_changed: mpsc::Sender<()>,
) {
    while let Ok(Some(notification)) = subscription.next().await {
        if matches!(
            notification,
            ServerNotification::ToolListChangedNotification(_)
        ) {
            let _ = list_changed.try_send(());
        }
    }
}
