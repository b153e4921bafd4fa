//! `grep`: search file contents like `rg --hidden`, with pi's output format, limits and notices.

use std::path::{Path, PathBuf};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::OverrideBuilder;
use pi_tool::{CancellationToken, State, ToolContext, ToolError, ToolResult, tool};
use serde_json::json;

use crate::Workspace;
use crate::tools::{
    Notice, aborted, listing, relative_posix, result_limit, rg_walker, search_root,
};
use crate::truncate::{GREP_MAX_LINE_LENGTH, truncate_line};

/// Matches returned when the model gives no `limit`.
const DEFAULT_LIMIT: i64 = 100;

/// Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars.
#[tool(name = "grep", label = "grep", read_only, open_world = false)]
#[allow(clippy::too_many_arguments)]
pub async fn grep(
    /// Search pattern (regex or literal string)
    pattern: String,
    /// Directory or file to search (default: current directory)
    path: Option<String>,
    /// Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'
    glob: Option<String>,
    /// Case-insensitive search (default: false)
    #[serde(rename = "ignoreCase")]
    ignore_case: Option<bool>,
    /// Treat pattern as literal string instead of regex (default: false)
    literal: Option<bool>,
    /// Number of lines to show before and after each match (default: 0)
    context: Option<i64>,
    /// Maximum number of matches to return (default: 100)
    limit: Option<i64>,
    workspace: State<Workspace>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    if ctx.is_aborted() {
        return Err(aborted());
    }
    let root = search_root(&workspace, path.as_deref())?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(ignore_case.unwrap_or(false))
        .fixed_strings(literal.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&pattern)
        .map_err(|err| ToolError::new(err.to_string()))?;
    let options = Search {
        root,
        glob,
        matcher,
        context: usize::try_from(context.unwrap_or(0).max(0)).unwrap_or(0),
        limit: result_limit(limit, DEFAULT_LIMIT),
        signal: ctx.signal().clone(),
    };
    let limit = options.limit;
    let found = tokio::task::spawn_blocking(move || options.run())
        .await
        .map_err(|err| ToolError::new(format!("grep failed: {err}")))??;
    if found.lines.is_empty() {
        return Ok(ToolResult::text("No matches found"));
    }
    let limit_notice = found.match_limit_reached.then(|| Notice {
        text: format!(
            "{limit} matches limit reached. Use limit={} for more, or refine pattern",
            limit.saturating_mul(2)
        ),
        key: "matchLimitReached",
        value: json!(limit),
    });
    let long_lines = found.lines_truncated.then(|| Notice {
        text: format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        ),
        key: "linesTruncated",
        value: json!(true),
    });
    Ok(listing(&found.lines, limit_notice, long_lines))
}

/// One search, run on a blocking thread.
struct Search {
    root: PathBuf,
    glob: Option<String>,
    matcher: RegexMatcher,
    context: usize,
    limit: usize,
    signal: CancellationToken,
}

/// Formatted output lines and what was cut.
struct Found {
    lines: Vec<String>,
    match_limit_reached: bool,
    lines_truncated: bool,
}

impl Search {
    fn run(self) -> Result<Found, ToolError> {
        let mut found = Found {
            lines: Vec::new(),
            match_limit_reached: false,
            lines_truncated: false,
        };
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        let single_file = self.root.is_file();
        let mut matches = 0usize;
        let mut walk = rg_walker(&self.root);
        if let Some(glob) = &self.glob {
            let mut overrides = OverrideBuilder::new(&self.root);
            overrides
                .add(glob)
                .map_err(|err| ToolError::new(err.to_string()))?;
            walk.overrides(
                overrides
                    .build()
                    .map_err(|err| ToolError::new(err.to_string()))?,
            );
        }
        for entry in walk.build() {
            if self.signal.is_cancelled() {
                return Err(aborted());
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let shown = if single_file {
                entry.file_name().to_string_lossy().into_owned()
            } else {
                relative_posix(entry.path(), &self.root)
            };
            let mut sink = MatchLines {
                numbers: Vec::new(),
                texts: Vec::new(),
                remaining: self.limit - matches,
                binary: false,
            };
            if searcher
                .search_path(&self.matcher, entry.path(), &mut sink)
                .is_err()
                || sink.binary
            {
                continue;
            }
            matches += sink.numbers.len();
            let file_lines = (self.context > 0).then(|| read_lines(entry.path()));
            for (number, text) in sink.numbers.iter().zip(&sink.texts) {
                self.format_block(&shown, *number, text, file_lines.as_ref(), &mut found);
            }
            if matches >= self.limit {
                found.match_limit_reached = true;
                break;
            }
        }
        Ok(found)
    }

    /// pi's `formatBlock`: the match line, with `context` lines around it read from the file.
    fn format_block(
        &self,
        shown: &str,
        number: usize,
        text: &str,
        file: Option<&Option<Vec<String>>>,
        found: &mut Found,
    ) {
        let push = |current: usize, line: &str, is_match: bool, found: &mut Found| {
            let (line, cut) = truncate_line(&line.replace('\r', ""), GREP_MAX_LINE_LENGTH);
            found.lines_truncated |= cut;
            let separator = if is_match { ':' } else { '-' };
            found
                .lines
                .push(format!("{shown}{separator}{current}{separator} {line}"));
        };
        match file {
            None => push(number, text, true, found),
            Some(None) => found
                .lines
                .push(format!("{shown}:{number}: (unable to read file)")),
            Some(Some(lines)) => {
                let start = number.saturating_sub(self.context).max(1);
                let end = (number + self.context).min(lines.len());
                for current in start..=end {
                    let line = lines.get(current - 1).map_or("", String::as_str);
                    push(current, line, current == number, found);
                }
            }
        }
    }
}

fn read_lines(path: &Path) -> Option<Vec<String>> {
    let bytes = std::fs::read(path).ok()?;
    Some(
        String::from_utf8_lossy(&bytes)
            .split('\n')
            .map(str::to_owned)
            .collect(),
    )
}

/// Collects matching line numbers and texts, up to `remaining`; notes binary files.
struct MatchLines {
    numbers: Vec<usize>,
    texts: Vec<String>,
    remaining: usize,
    binary: bool,
}

impl Sink for MatchLines {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _searcher: &Searcher,
        mat: &SinkMatch<'_>,
    ) -> Result<bool, std::io::Error> {
        let first = usize::try_from(mat.line_number().unwrap_or(1)).unwrap_or(usize::MAX);
        for (offset, line) in mat.lines().enumerate() {
            if self.numbers.len() >= self.remaining {
                return Ok(false);
            }
            let text = String::from_utf8_lossy(line);
            self.numbers.push(first + offset);
            self.texts
                .push(text.trim_end_matches(['\n', '\r']).to_owned());
        }
        Ok(self.numbers.len() < self.remaining)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}
