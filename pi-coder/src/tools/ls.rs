//! `ls`: one directory's entries, dotfiles included, sorted the way pi sorts them, `/` after
//! directories.

use std::cmp::Ordering;
use std::sync::LazyLock;

use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed};
use pi_tool::{State, ToolContext, ToolError, ToolResult, tool};
use serde_json::json;

use crate::Workspace;
use crate::tools::{Notice, aborted, listing, result_limit};

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
    let limit = result_limit(limit, DEFAULT_LIMIT);
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
    sort_like_pi(&mut names);

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

/// The Unicode collation (CLDR root, tertiary strength) behind JavaScript's `localeCompare` in
/// pi's `en-US` Node: built once.
static COLLATOR: LazyLock<Option<CollatorBorrowed<'static>>> =
    LazyLock::new(|| Collator::try_new(Default::default(), CollatorOptions::default()).ok());

/// pi's order (ls.ts:154, `a.toLowerCase().localeCompare(b.toLowerCase())`): the way a person
/// reads a listing, not by bytes: punctuation before digits before letters (`_config.yml .env
/// 10.txt 2.txt A.txt b.txt`), accents after the plain letter (`e.txt é.txt f.txt`). Names pi
/// finds equal keep the directory's order there; here they fall back to byte order, so the
/// listing is stable.
pub(crate) fn sort_like_pi(names: &mut [String]) {
    let mut keyed: Vec<(String, String)> = names
        .iter_mut()
        .map(|name| (name.to_lowercase(), std::mem::take(name)))
        .collect();
    keyed.sort_by(|(a_key, a), (b_key, b)| {
        let by_collation = COLLATOR
            .as_ref()
            .map_or(Ordering::Equal, |collator| collator.compare(a_key, b_key));
        by_collation
            .then_with(|| a_key.cmp(b_key))
            .then_with(|| a.cmp(b))
    });
    for (slot, (_, name)) in names.iter_mut().zip(keyed) {
        *slot = name;
    }
}
