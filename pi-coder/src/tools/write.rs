//! `write`: create or overwrite a file, creating parent directories, serialized per file.

use pi_tool::{State, ToolContext, ToolError, tool};

use crate::fs_error;
use crate::{Workspace, tools::aborted};

/// Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.
#[tool(
    name = "write",
    label = "write",
    read_only = false,
    destructive,
    idempotent,
    open_world = false
)]
pub async fn write(
    /// Path to the file to write (relative or absolute)
    path: String,
    /// Content to write to the file
    content: String,
    workspace: State<Workspace>,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    if ctx.is_aborted() {
        return Err(aborted());
    }
    let absolute = workspace.resolve(&path)?;
    let _guard = workspace.lock_file(&absolute).await;
    if ctx.is_aborted() {
        return Err(aborted());
    }
    if let Some(parent) = absolute.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|err| ToolError::new(fs_error::describe(&err, "mkdir", parent)))?;
    }
    tokio::fs::write(&absolute, content.as_bytes())
        .await
        .map_err(|err| ToolError::new(fs_error::describe(&err, "open", &absolute)))?;
    Ok(format!(
        "Successfully wrote {} bytes to {path}",
        content.len()
    ))
}
