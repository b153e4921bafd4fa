//! `read`: a text file with offset/limit and pi's continuation notices, or an image as an attachment.

use pi_tool::{Content, State, ToolContext, ToolError, ToolResult, tool};
use serde_json::{Value, json};

use crate::fs_error;
use crate::tools::image::{self, PreparedImage};
use crate::tools::lines::{Scanned, scan};
use crate::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncatedBy, format_size, truncate_head,
};
use crate::{Workspace, tools::aborted};

/// How many bytes decide whether a file is binary (and which image type it is).
const SNIFF_BYTES: usize = 8192;

/// Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.
#[tool(name = "read", label = "read", read_only, open_world = false)]
pub async fn read(
    /// Path to the file to read (relative or absolute)
    path: String,
    /// Line number to start reading from (1-indexed)
    offset: Option<i64>,
    /// Maximum number of lines to read
    limit: Option<i64>,
    workspace: State<Workspace>,
    ctx: ToolContext,
) -> Result<ToolResult, ToolError> {
    if ctx.is_aborted() {
        return Err(aborted());
    }
    let mut absolute = workspace.resolve(&path)?;
    if !absolute.exists()
        && let Some(variant) = macos_variant(&absolute)
    {
        workspace.check(&variant)?;
        absolute = variant;
    }
    let metadata = tokio::fs::metadata(&absolute)
        .await
        .map_err(|err| ToolError::new(fs_error::describe(&err, "access", &absolute)))?;
    if metadata.is_dir() {
        return Err(ToolError::new(
            "EISDIR: illegal operation on a directory, read",
        ));
    }
    let head = read_head(&absolute).await?;
    if let Some(mime) = image::sniff_mime(&head) {
        let bytes = tokio::select! {
            bytes = tokio::fs::read(&absolute) => bytes.map_err(|err| ToolError::new(fs_error::describe(&err, "open", &absolute)))?,
            () = ctx.signal().cancelled() => return Err(aborted()),
        };
        return read_image(bytes, mime, workspace.images_supported()).await;
    }
    if head.contains(&0) {
        return Err(ToolError::new(format!(
            "Cannot read {path}: it is a binary file ({}), not text or a supported image (jpg, png, gif, webp). Use bash to inspect it, e.g. xxd {path} | head",
            format_size(usize::try_from(metadata.len()).unwrap_or(usize::MAX))
        )));
    }
    let start = match offset {
        Some(offset) if offset > 0 => usize::try_from(offset - 1).unwrap_or(usize::MAX),
        _ => 0,
    };
    // `limit: 0` selects no lines, and pi answers with the continuation notice (read.ts:293-322).
    // A negative limit makes pi slice from the end of the file and point at a negative offset;
    // we refuse it instead.
    let take = match limit {
        Some(limit) if limit < 0 => {
            return Err(ToolError::new(format!(
                "limit must be at least 0 (got {limit})"
            )));
        }
        Some(limit) => usize::try_from(limit).unwrap_or(usize::MAX),
        None => usize::MAX,
    };
    let file = tokio::fs::File::open(&absolute)
        .await
        .map_err(|err| ToolError::new(fs_error::describe(&err, "open", &absolute)))?
        .into_std()
        .await;
    let signal = ctx.signal().clone();
    let scanned = tokio::task::spawn_blocking(move || scan(file, start, take, &signal))
        .await
        .map_err(|err| ToolError::new(format!("read failed: {err}")))?
        .map_err(|err| ToolError::new(fs_error::describe(&err, "read", &absolute)))?
        .ok_or_else(aborted)?;
    render_text(&scanned, &path, offset, start, limit.is_some())
}

/// pi's fallbacks for names macOS writes differently from how they are typed: a narrow no-break
/// space before AM/PM (screenshots), decomposed (NFD) accents, a curly apostrophe. The first
/// variant that exists, if the path as given does not.
fn macos_variant(path: &std::path::Path) -> Option<std::path::PathBuf> {
    use unicode_normalization::UnicodeNormalization;

    let text = path.to_str()?;
    let narrow = text
        .replace(" AM.", "\u{202F}AM.")
        .replace(" PM.", "\u{202F}PM.");
    let nfd: String = text.nfd().collect();
    let curly = text.replace('\'', "\u{2019}");
    let nfd_curly: String = curly.nfd().collect();
    [narrow, nfd, curly, nfd_curly]
        .into_iter()
        .filter(|candidate| candidate != text)
        .map(std::path::PathBuf::from)
        .find(|candidate| candidate.exists())
}

/// The first bytes of the file: enough to tell an image or a binary file from text.
async fn read_head(path: &std::path::Path) -> Result<Vec<u8>, ToolError> {
    use tokio::io::AsyncReadExt;

    let file = tokio::fs::File::open(path)
        .await
        .map_err(|err| ToolError::new(fs_error::describe(&err, "open", path)))?;
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    file.take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .await
        .map_err(|err| ToolError::new(fs_error::describe(&err, "read", path)))?;
    Ok(head)
}

/// pi's text path: the selected lines truncated from the head, with the notice that says how
/// to go on.
fn render_text(
    scanned: &Scanned,
    path: &str,
    offset: Option<i64>,
    start: usize,
    user_limited: bool,
) -> Result<ToolResult, ToolError> {
    let total = scanned.total_lines;
    if start >= total {
        let shown = offset.map_or_else(|| "0".to_owned(), |o| o.to_string());
        return Err(ToolError::new(format!(
            "Offset {shown} is beyond end of file ({total} lines total)"
        )));
    }
    let mut truncation = truncate_head(
        &scanned.kept.join("\n"),
        DEFAULT_MAX_LINES,
        DEFAULT_MAX_BYTES,
    );
    // Only a bounded prefix of the selection was kept: report the selection's real size.
    truncation.total_lines = scanned.selected_lines;
    truncation.total_bytes = scanned.selected_bytes;
    let first = start + 1;
    let limit_size = format_size(DEFAULT_MAX_BYTES);
    if truncation.first_line_exceeds_limit {
        let line_size = format_size(scanned.first_line_bytes);
        let text = format!(
            "[Line {first} is {line_size}, exceeds {limit_size} limit. Use bash: sed -n '{first}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        );
        return Ok(ToolResult::new(
            vec![Content::text(text)],
            json!({ "truncation": truncation }),
        ));
    }
    if truncation.truncated {
        let last = first + truncation.output_lines - 1;
        let mut text = truncation.content.clone();
        match truncation.truncated_by {
            Some(TruncatedBy::Bytes) => text.push_str(&format!(
                "\n\n[Showing lines {first}-{last} of {total} ({limit_size} limit). Use offset={} to continue.]",
                last + 1
            )),
            _ => text.push_str(&format!(
                "\n\n[Showing lines {first}-{last} of {total}. Use offset={} to continue.]",
                last + 1
            )),
        }
        return Ok(ToolResult::new(
            vec![Content::text(text)],
            json!({ "truncation": truncation }),
        ));
    }
    let mut text = truncation.content;
    let shown = scanned.selected_lines;
    if user_limited && start + shown < total {
        let remaining = total - (start + shown);
        text.push_str(&format!(
            "\n\n[{remaining} more lines in file. Use offset={} to continue.]",
            start + shown + 1
        ));
    }
    Ok(ToolResult::new(vec![Content::text(text)], Value::Null))
}

async fn read_image(
    bytes: Vec<u8>,
    mime: &'static str,
    images_supported: bool,
) -> Result<ToolResult, ToolError> {
    let prepared = tokio::task::spawn_blocking(move || image::prepare(&bytes, mime))
        .await
        .map_err(|err| ToolError::new(format!("Image processing failed: {err}")))?;
    let Some(PreparedImage {
        data,
        mime_type,
        resized,
    }) = prepared
    else {
        let text = format!(
            "Read image file [{mime}]\n[Image omitted: could not be resized below the inline image size limit.]"
        );
        return Ok(ToolResult::new(vec![Content::text(text)], Value::Null));
    };
    let mut text = format!("Read image file [{mime_type}]");
    if let Some(((ow, oh), (dw, dh))) = resized {
        let scale = crate::truncate::js_to_fixed(f64::from(ow) / f64::from(dw), 2);
        text.push_str(&format!(
            "\n[Image: original {ow}x{oh}, displayed at {dw}x{dh}. Multiply coordinates by {scale} to map to original image.]"
        ));
    }
    if !images_supported {
        text.push_str("\n[Current model does not support images. The image will be omitted from this request.]");
    }
    Ok(ToolResult::new(
        vec![Content::text(text), Content::image(data, mime_type)],
        Value::Null,
    ))
}
