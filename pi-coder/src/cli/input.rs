//! The first prompt as pi builds it (`cli/initial-message.ts`, `cli/file-processor.ts`): piped
//! stdin, then the `@file` arguments inlined (`<file name="/abs/path">` ... `</file>`, images
//! attached), then the first prompt argument, joined with nothing between them, as pi joins
//! them.

use std::path::Path;

use pi_tool::Content;

use super::Input;

/// The rest of standard input (not a terminal), trimmed; `None` when it is empty.
pub(super) async fn read_rest(input: &Input) -> Option<String> {
    let mut lines = input.lock().await;
    let mut text = String::new();
    while let Ok(Some(line)) = lines.next_line().await {
        text.push_str(&line);
        text.push('\n');
    }
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// pi's `buildInitialMessage`: stdin, the files' text and the first of `messages` (taken out of
/// it), as one prompt with the files' images after its text; `None` when there is none of them.
pub(super) fn initial_message(
    stdin: Option<&str>,
    files: &[String],
    messages: &mut Vec<String>,
    cwd: &Path,
) -> Result<Option<Vec<Content>>, String> {
    let (file_text, images) = file_arguments(files, cwd)?;
    let mut parts: Vec<String> = Vec::new();
    if let Some(stdin) = stdin {
        parts.push(stdin.to_owned());
    }
    if !file_text.is_empty() {
        parts.push(file_text);
    }
    if !messages.is_empty() {
        parts.push(messages.remove(0));
    }
    if parts.is_empty() && images.is_empty() {
        return Ok(None);
    }
    let mut content = vec![Content::text(parts.concat())];
    content.extend(images);
    Ok(Some(content))
}

/// pi's `processFileArguments`: each `@file` (the `@` already there) as text in `<file>` tags,
/// or an image attached with a `<file>` line naming it; an empty file is skipped, a missing one
/// is an error.
fn file_arguments(files: &[String], cwd: &Path) -> Result<(String, Vec<Content>), String> {
    let mut text = String::new();
    let mut images = Vec::new();
    for arg in files {
        let name = arg.strip_prefix('@').unwrap_or(arg);
        let path = crate::Workspace::new(cwd)
            .resolve(name)
            .map_err(|err| format!("Error: {err}"))?;
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("Error: File not found: {}", path.display()));
            }
            Err(err) => {
                return Err(format!(
                    "Error: Could not read file {}: {err}",
                    path.display()
                ));
            }
        };
        if bytes.is_empty() {
            continue;
        }
        let shown = path.display();
        if let Some(mime) = crate::tools::image::sniff_mime(&bytes) {
            match crate::tools::image::prepare(&bytes, mime) {
                Some(image) => {
                    let note = image.resized.map(|((ow, oh), (dw, dh))| {
                        let scale = crate::truncate::js_to_fixed(f64::from(ow) / f64::from(dw), 2);
                        format!("[Image: original {ow}x{oh}, displayed at {dw}x{dh}. Multiply coordinates by {scale} to map to original image.]")
                    });
                    text.push_str(&format!(
                        "<file name=\"{shown}\">{}</file>\n",
                        note.unwrap_or_default()
                    ));
                    images.push(Content::image(image.data, image.mime_type));
                }
                None => text.push_str(&format!(
                    "<file name=\"{shown}\">[Image omitted: could not be resized below the inline image size limit.]</file>\n"
                )),
            }
            continue;
        }
        let content = String::from_utf8(bytes)
            .map_err(|err| format!("Error: Could not read file {shown}: {err}"))?;
        text.push_str(&format!("<file name=\"{shown}\">\n{content}\n</file>\n"));
    }
    Ok((text, images))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_files_and_the_first_prompt_are_joined_as_pi_joins_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hello from notes\n").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let mut messages = vec!["summarize".to_owned(), "then this".to_owned()];
        let content = initial_message(
            Some("PIPED"),
            &["@notes.txt".into(), "@empty.txt".into()],
            &mut messages,
            dir.path(),
        )
        .unwrap()
        .unwrap();
        let abs = dir.path().join("notes.txt");
        assert_eq!(
            content,
            [Content::text(format!(
                "PIPED<file name=\"{}\">\nhello from notes\n\n</file>\nsummarize",
                abs.display()
            ))]
        );
        assert_eq!(messages, ["then this"]);
        let err =
            initial_message(None, &["@nope.txt".into()], &mut Vec::new(), dir.path()).unwrap_err();
        assert!(err.starts_with("Error: File not found: "), "{err}");
        assert_eq!(
            initial_message(None, &[], &mut Vec::new(), dir.path()).unwrap(),
            None
        );
    }
}
