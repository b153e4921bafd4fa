//! `ls`: one directory's entries, dotfiles included, sorted the way pi sorts them, `/` after
//! directories.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::LazyLock;

use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed};
use pi_tool::{State, ToolContext, ToolError, ToolResult, tool};
use serde_json::json;
use tokio_util::sync::CancellationToken;

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
    // One blocking job for the whole folder: a `tokio::fs` call per entry would be a job each
    // (a 100-entry folder, 100 jobs, and as many blocking threads under load).
    let signal = ctx.signal().clone();
    let listed = tokio::task::spawn_blocking(move || read_listing(&dir, limit, &signal))
        .await
        .map_err(|err| ToolError::new(format!("Cannot read directory: {err}")))??;
    let Listing {
        entries,
        limit_reached,
    } = listed;
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

/// A folder's entries, as the model sees them, up to the limit.
struct Listing {
    entries: Vec<String>,
    limit_reached: bool,
}

/// Reads `dir` on the calling (blocking) thread: its entries sorted as pi sorts them, `/` after
/// directories, at most `limit`; stops with "Operation aborted" once `signal` is cancelled.
fn read_listing(
    dir: &Path,
    limit: usize,
    signal: &CancellationToken,
) -> Result<Listing, ToolError> {
    let metadata = std::fs::metadata(dir)
        .map_err(|_| ToolError::new(format!("Path not found: {}", dir.display())))?;
    if !metadata.is_dir() {
        return Err(ToolError::new(format!(
            "Not a directory: {}",
            dir.display()
        )));
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)
        .map_err(|err| ToolError::new(format!("Cannot read directory: {err}")))?
    {
        let entry = entry.map_err(|err| ToolError::new(format!("Cannot read directory: {err}")))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    sort_like_pi(&mut names);

    let mut entries = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if entries.len() >= limit {
            limit_reached = true;
            break;
        }
        if signal.is_cancelled() {
            return Err(aborted());
        }
        // Follows symlinks; an entry that cannot be stat'ed (a dangling link, a loop) is skipped.
        let Ok(meta) = std::fs::metadata(dir.join(&name)) else {
            continue;
        };
        entries.push(if meta.is_dir() {
            format!("{name}/")
        } else {
            name
        });
    }
    Ok(Listing {
        entries,
        limit_reached,
    })
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
