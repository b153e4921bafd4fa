//! An MCP `CallToolResult` as our `ToolResult`: what the model can see stays as it is, what our
//! `Content` cannot hold becomes text that says what it was.

use pi_tool::{Content, ToolResult};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// `isError` -> `is_error`; `structuredContent` -> `details` (`null` when absent); text and image
/// blocks as they are; audio, resource links and embedded resources described in text (an
/// embedded text resource keeps its text; an embedded image becomes an image block).
pub(crate) fn to_tool_result(result: CallToolResult) -> ToolResult {
    let content = result.content.into_iter().map(to_content).collect();
    let mut converted = ToolResult::new(content, result.structured_content.unwrap_or(Value::Null));
    converted.is_error = result.is_error.unwrap_or(false);
    converted
}

fn to_content(block: ContentBlock) -> Content {
    match block {
        ContentBlock::Text(text) => Content::text(text.text),
        ContentBlock::Image(image) => Content::image(image.data, image.mime_type),
        ContentBlock::Audio(audio) => Content::text(format!(
            "[audio content: {}, {} bytes, not shown]",
            audio.mime_type,
            decoded_len(&audio.data)
        )),
        ContentBlock::ResourceLink(link) => {
            let mut text = format!("[resource link: {} <{}>", link.name, link.uri);
            if let Some(mime_type) = &link.mime_type {
                text.push_str(&format!(", {mime_type}"));
            }
            text.push(']');
            if let Some(description) = &link.description {
                text.push_str(&format!(" {description}"));
            }
            Content::text(text)
        }
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                Content::text(format!("[resource <{uri}>]\n{text}"))
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => match mime_type {
                Some(mime_type) if mime_type.starts_with("image/") => {
                    Content::image(blob, mime_type)
                }
                mime_type => Content::text(format!(
                    "[binary resource <{uri}>: {}, {} bytes, not shown]",
                    mime_type.as_deref().unwrap_or("unknown type"),
                    decoded_len(&blob)
                )),
            },
            other => Content::text(format!(
                "[resource of a kind this client does not know: {}]",
                serde_json::to_string(&other).unwrap_or_default()
            )),
        },
        other => Content::text(format!(
            "[content of a kind this client does not know: {}]",
            serde_json::to_string(&other).unwrap_or_default()
        )),
    }
}

/// The byte length of base64 data, without decoding it.
fn decoded_len(base64: &str) -> usize {
    let data = base64.trim_end_matches('=');
    data.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn convert(wire: Value) -> ToolResult {
        to_tool_result(serde_json::from_value(wire).expect("a valid CallToolResult"))
    }

    #[test]
    fn text_image_structured_and_error_map_across() {
        let result = convert(json!({
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"}
            ],
            "structuredContent": {"temperature": 21},
            "isError": true
        }));
        assert_eq!(
            result.content,
            vec![Content::text("hi"), Content::image("iVBORw0K", "image/png")]
        );
        assert_eq!(result.details, json!({"temperature": 21}));
        assert!(result.is_error);
    }

    #[test]
    fn what_content_cannot_hold_becomes_text_that_says_what_it_was() {
        let result = convert(json!({
            "content": [
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain", "description": "A file"},
                {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///c.bin", "blob": "AAAAAA==", "mimeType": "application/octet-stream"}},
                {"type": "resource", "resource": {"uri": "file:///d.png", "blob": "iVBO", "mimeType": "image/png"}}
            ]
        }));
        let texts: Vec<Option<&str>> = result.content.iter().map(Content::as_text).collect();
        assert_eq!(
            texts[0],
            Some("[audio content: audio/wav, 3 bytes, not shown]")
        );
        assert_eq!(
            texts[1],
            Some("[resource link: a.txt <file:///a.txt>, text/plain] A file")
        );
        assert_eq!(texts[2], Some("[resource <file:///b.txt>]\ninside"));
        assert_eq!(
            texts[3],
            Some("[binary resource <file:///c.bin>: application/octet-stream, 4 bytes, not shown]")
        );
        assert_eq!(result.content[4], Content::image("iVBO", "image/png"));
        assert_eq!(result.details, Value::Null);
        assert!(!result.is_error);
    }
}
