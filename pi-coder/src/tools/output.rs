//! `bash`'s output accumulator: the merged stream kept as a bounded tail, with the full output
//! spilled to `pi-bash-<16 hex>.log` once it goes over pi's limits.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use tokio::io::AsyncWriteExt;

use crate::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, truncate_tail};

/// Once the in-memory tail is this big it is cut back to [`KEEP_BYTES`] (only after the full
/// output is safe in the log file).
const TRIM_AT_BYTES: usize = 4 * DEFAULT_MAX_BYTES;
/// What stays in memory after a cut: twice what is ever shown.
const KEEP_BYTES: usize = 2 * DEFAULT_MAX_BYTES;

/// The tail of a command's output, the totals of all of it, and the log file once there is one.
pub(crate) struct OutputTail {
    temp_dir: PathBuf,
    tail: Vec<u8>,
    trimmed: bool,
    total_bytes: usize,
    newlines: usize,
    bytes_since_newline: usize,
    log: Option<(PathBuf, tokio::fs::File)>,
    log_error: Option<String>,
}

/// A view of the output: the text to show (tail-truncated) and what was cut.
pub(crate) struct Snapshot {
    pub(crate) truncation: Truncation,
    pub(crate) full_output_path: Option<PathBuf>,
    last_line_bytes: usize,
}

impl OutputTail {
    pub(crate) fn new(temp_dir: &Path) -> Self {
        OutputTail {
            temp_dir: temp_dir.to_path_buf(),
            tail: Vec::new(),
            trimmed: false,
            total_bytes: 0,
            newlines: 0,
            bytes_since_newline: 0,
            log: None,
            log_error: None,
        }
    }

    /// Adds a chunk of output, spilling everything to the log file once over the limits.
    pub(crate) async fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len();
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                self.newlines += chunk.iter().filter(|&&b| b == b'\n').count();
                self.bytes_since_newline = chunk.len() - last - 1;
            }
            None => self.bytes_since_newline += chunk.len(),
        }
        self.tail.extend_from_slice(chunk);
        let over_limits =
            self.total_bytes > DEFAULT_MAX_BYTES || self.newlines + 1 > DEFAULT_MAX_LINES;
        if over_limits && self.log.is_none() && self.log_error.is_none() {
            self.open_log().await;
        } else if let Some((_, file)) = &mut self.log
            && let Err(err) = file.write_all(chunk).await
        {
            self.log_error = Some(err.to_string());
        }
        if self.log.is_some() && self.tail.len() > TRIM_AT_BYTES {
            let cut = self.tail.len() - KEEP_BYTES;
            self.tail.drain(..cut);
            self.trimmed = true;
        }
    }

    /// Creates the log file and writes all output so far (still whole in memory: nothing is
    /// trimmed before the log exists).
    async fn open_log(&mut self) {
        let path = self
            .temp_dir
            .join(format!("pi-bash-{:016x}.log", fastrand::u64(..)));
        let opened = async {
            let mut file = tokio::fs::File::create(&path).await?;
            file.write_all(&self.tail).await?;
            Ok::<_, std::io::Error>(file)
        };
        match opened.await {
            Ok(file) => self.log = Some((path, file)),
            Err(err) => self.log_error = Some(format!("{}: {err}", path.display())),
        }
    }

    /// Flushes the log file.
    pub(crate) async fn finish(&mut self) {
        if let Some((_, file)) = &mut self.log
            && let Err(err) = file.flush().await
        {
            self.log_error = Some(err.to_string());
        }
    }

    /// The current tail, truncated to pi's limits, with totals over the whole output.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let text = String::from_utf8_lossy(&self.tail);
        let visible = if self.trimmed {
            text.find('\n').map_or(&*text, |first| &text[first + 1..])
        } else {
            &*text
        };
        let mut truncation = truncate_tail(visible, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        if self.trimmed {
            truncation.truncated = true;
            truncation
                .truncated_by
                .get_or_insert(crate::truncate::TruncatedBy::Bytes);
        }
        truncation.total_lines = self.newlines + 1;
        truncation.total_bytes = self.total_bytes;
        Snapshot {
            truncation,
            full_output_path: self.log.as_ref().map(|(path, _)| path.clone()),
            last_line_bytes: self.bytes_since_newline,
        }
    }

    /// Why the full output could not be saved, if it could not.
    pub(crate) fn log_error(&self) -> Option<&str> {
        self.log_error.as_deref()
    }
}

impl Snapshot {
    /// The text with pi's truncation notice appended when something was cut.
    pub(crate) fn text_with_notice(&self) -> String {
        let t = &self.truncation;
        let mut text = t.content.clone();
        if !t.truncated {
            return text;
        }
        let path = self
            .full_output_path
            .as_ref()
            .map_or_else(|| "(not saved)".to_owned(), |p| p.display().to_string());
        let end = t.total_lines;
        let start = end + 1 - t.output_lines.min(end);
        let limit = crate::truncate::format_size(DEFAULT_MAX_BYTES);
        let notice = if t.last_line_partial {
            format!(
                "[Showing last {} of line {end} (line is {}). Full output: {path}]",
                crate::truncate::format_size(t.output_bytes),
                crate::truncate::format_size(self.last_line_bytes)
            )
        } else if t.truncated_by == Some(crate::truncate::TruncatedBy::Lines) {
            format!("[Showing lines {start}-{end} of {end}. Full output: {path}]")
        } else {
            format!("[Showing lines {start}-{end} of {end} ({limit} limit). Full output: {path}]")
        };
        text.push_str("\n\n");
        text.push_str(&notice);
        text
    }

    /// `{truncation?, fullOutputPath?}`, or `null` when neither applies.
    pub(crate) fn details(&self) -> Value {
        let mut details = Map::new();
        if self.truncation.truncated {
            details.insert(
                "truncation".into(),
                serde_json::to_value(&self.truncation).unwrap_or(Value::Null),
            );
        }
        if let Some(path) = &self.full_output_path {
            details.insert(
                "fullOutputPath".into(),
                Value::String(path.display().to_string()),
            );
        }
        if details.is_empty() {
            Value::Null
        } else {
            Value::Object(details)
        }
    }
}
