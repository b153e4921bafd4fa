//! `read`: a text file with offset/limit and pi's continuation notices, or an image as an attachment.

use pi_tool::{Content, State, ToolContext, ToolError, ToolResult, tool};
use serde_json::{Value, json};

use crate::fs_error;
use crate::tools::image::{self, PreparedImage};
use crate::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncatedBy, format_size, truncate_head,
};
use crate::{Workspace, tools::aborted};

/// How many bytes decide whether a file is binary (and which image type it is).
const SNIFF_BYTES: usize = 8192;

/// Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.
#[tool(name = "read", label = "read")]
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
    let absolute = workspace.resolve(&path)?;
    let metadata = tokio::fs::metadata(&absolute)
        .await
        .map_err(|err| ToolError::new(fs_error::describe(&err, "access", &absolute)))?;
    if metadata.is_dir() {
        return Err(ToolError::new(
            "EISDIR: illegal operation on a directory, read",
        ));
    }
    let bytes = tokio::select! {
        bytes = tokio::fs::read(&absolute) => bytes.map_err(|err| ToolError::new(fs_error::describe(&err, "open", &absolute)))?,
        () = ctx.signal().cancelled() => return Err(aborted()),
    };
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some(mime) = image::sniff_mime(head) {
        return read_image(bytes, mime, workspace.images_supported()).await;
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) if err.as_bytes()[..err.as_bytes().len().min(SNIFF_BYTES)].contains(&0) => {
            return Err(ToolError::new(format!(
                "Cannot read {path}: it is a binary file ({}), not text or a supported image (jpg, png, gif, webp). Use bash to inspect it, e.g. xxd {path} | head",
                format_size(err.as_bytes().len())
            )));
        }
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    };
    read_text(&text, &path, offset, limit)
}

/// pi's text path: select lines, truncate from the head, add the notice that says how to go on.
fn read_text(
    text: &str,
    path: &str,
    offset: Option<i64>,
    limit: Option<i64>,
) -> Result<ToolResult, ToolError> {
    let lines: Vec<&str> = text.split('\n').collect();
    let total = lines.len();
    let start = match offset {
        Some(offset) if offset > 0 => usize::try_from(offset - 1).unwrap_or(usize::MAX),
        _ => 0,
    };
    if start >= total {
        let shown = offset.map_or_else(|| "0".to_owned(), |o| o.to_string());
        return Err(ToolError::new(format!(
            "Offset {shown} is beyond end of file ({total} lines total)"
        )));
    }
    let (selected, user_limited) = match limit {
        Some(limit) if limit < 1 => {
            return Err(ToolError::new(format!(
                "limit must be at least 1 (got {limit})"
            )));
        }
        Some(limit) => {
            let end = start
                .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
                .min(total);
            (lines[start..end].join("\n"), Some(end - start))
        }
        None => (lines[start..].join("\n"), None),
    };
    let truncation = truncate_head(&selected, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    let first = start + 1;
    let limit_size = format_size(DEFAULT_MAX_BYTES);
    if truncation.first_line_exceeds_limit {
        let line_size = format_size(lines[start].len());
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
    if let Some(shown) = user_limited
        && start + shown < total
    {
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
        let scale = f64::from(ow) / f64::from(dw);
        text.push_str(&format!(
            "\n[Image: original {ow}x{oh}, displayed at {dw}x{dh}. Multiply coordinates by {scale:.2} to map to original image.]"
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
