//! `ls`: one directory's entries, dotfiles included, sorted case-insensitively, `/` after directories.

use pi_tool::{State, ToolContext, ToolError, ToolResult, tool};
use serde_json::json;

use crate::Workspace;
use crate::tools::{Notice, aborted, listing};

/// Entries returned when the model gives no `limit`.
const DEFAULT_LIMIT: i64 = 500;

/// List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first).
#[tool(name = "ls", label = "ls", read_only, open_world = false)]
pub async fn ls(
    /// Directory to list (default: current directory)
    path: Option<String>,
    /// Maximum number of entries to return (default: 500)
    limit: Option<i64>,
    workspace: State<Workspace>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    if ctx.is_aborted() {
        return Err(aborted());
    }
    let dir = workspace.resolve_or_cwd(path.as_deref())?;
    let limit = usize::try_from(limit.unwrap_or(DEFAULT_LIMIT).max(1)).unwrap_or(usize::MAX);
    let metadata = tokio::fs::metadata(&dir)
        .await
        .map_err(|_| ToolError::new(format!("Path not found: {}", dir.display())))?;
    if !metadata.is_dir() {
        return Err(ToolError::new(format!(
            "Not a directory: {}",
            dir.display()
        )));
    }
    let mut names = Vec::new();
    let mut reader = tokio::fs::read_dir(&dir)
        .await
        .map_err(|err| ToolError::new(format!("Cannot read directory: {err}")))?;
    while let Some(entry) = reader
        .next_entry()
        .await
        .map_err(|err| ToolError::new(format!("Cannot read directory: {err}")))?
    {
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort_by(|a, b| {
        a.to_lowercase()
            .cmp(&b.to_lowercase())
            .then_with(|| a.cmp(b))
    });

    let mut entries = Vec::new();
    let mut limit_reached = false;
    for name in &names {
        if entries.len() >= limit {
            limit_reached = true;
            break;
        }
        if ctx.is_aborted() {
            return Err(aborted());
        }
        // Follows symlinks; an entry that cannot be stat'ed (a dangling link, a loop) is skipped.
        let Ok(meta) = tokio::fs::metadata(dir.join(name)).await else {
            continue;
        };
        entries.push(if meta.is_dir() {
            format!("{name}/")
        } else {
            name.clone()
        });
    }
    if entries.is_empty() {
        return Ok(ToolResult::text("(empty directory)"));
    }
    let limit_notice = limit_reached.then(|| Notice {
        text: format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit.saturating_mul(2)
        ),
        key: "entryLimitReached",
        value: json!(limit),
    });
    Ok(listing(&entries, limit_notice, None))
}
