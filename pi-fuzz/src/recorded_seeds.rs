//! Seeds made from the recorded provider streams, built when a driver runs: the recordings are
//! other projects' files, kept beside the repository (`shared/recordings/`, or the folder
//! `PI_RECORDINGS` names), not in it, so the stored corpus holds none of them.

use std::path::{Path, PathBuf};

use crate::recorded;

/// One seed input for a target.
#[derive(Clone, Debug)]
pub struct Seed {
    /// The target it is for (`sse` or a decoder target).
    pub target: &'static str,
    /// `<set>--<path of the recording>`, with `/` as `--`: where it came from.
    pub name: String,
    /// The target's input: a mode byte, then the (shortened) body.
    pub input: Vec<u8>,
}

/// The seeds of every recording, in path order: for a decoder target, the body cut to its first
/// 10 and last 4 events (mode `1` for a recording of one JSON chunk per line, `0` for a raw
/// event stream), and each raw event stream for `sse` too (mode `7`).
///
/// Empty when the recordings are missing outside CI (after saying so on stderr); in CI (`CI`
/// set) their absence is a panic, as for every test that reads them.
pub fn recorded_seeds() -> Vec<Seed> {
    if !recorded::present() {
        return Vec::new();
    }
    let root = recorded::root();
    let mut files = Vec::new();
    for origin in folders(&root.join("providers")) {
        for api in folders(&origin) {
            files.extend(streams(&api));
        }
    }
    for api in folders(&root.join("providers-more")) {
        files.extend(streams(&api));
    }
    files.sort();
    let mut seeds = Vec::new();
    for file in files {
        let Some(target) = file
            .parent()
            .and_then(Path::file_name)
            .and_then(|api| decoder_target(&api.to_string_lossy()))
        else {
            continue;
        };
        let relative = file.strip_prefix(&root).unwrap_or(&file);
        let name = relative.to_string_lossy().replace(['/', '\\'], "--");
        let body = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if name.ends_with(".chunks.txt") {
            seeds.push(seed(target, name, 1, &shorten(&body, "\n")));
        } else {
            let short = shorten(&body, "\n\n");
            seeds.push(seed("sse", name.clone(), 7, &short));
            seeds.push(seed(target, name, 0, &short));
        }
    }
    seeds
}

fn seed(target: &'static str, name: String, mode: u8, body: &[u8]) -> Seed {
    let mut input = Vec::with_capacity(body.len() + 1);
    input.push(mode);
    input.extend_from_slice(body);
    Seed {
        target,
        name,
        input,
    }
}

/// The decoder target of an API folder's name.
fn decoder_target(api: &str) -> Option<&'static str> {
    match api {
        "openai-completions" => Some("decode_openai_completions"),
        "openai-responses" => Some("decode_openai_responses"),
        "anthropic" => Some("decode_anthropic"),
        "google" => Some("decode_google"),
        _ => None,
    }
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    entries.filter_map(Result::ok).map(|e| e.path()).collect()
}

fn folders(dir: &Path) -> Vec<PathBuf> {
    entries(dir).into_iter().filter(|p| p.is_dir()).collect()
}

/// The recorded bodies in an API folder (not its notes, nor `providers-more`'s HTTP error
/// bodies, `*.json`).
fn streams(dir: &Path) -> Vec<PathBuf> {
    entries(dir)
        .into_iter()
        .filter(|p| p.is_file())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(".sse") || name.ends_with(".chunks.txt")
        })
        .collect()
}

/// A body cut to its first 10 and last 4 events (separated by `separator`) when longer than 4 KiB:
/// small seeds that still start and end as the provider's streams do.
fn shorten(body: &[u8], separator: &str) -> Vec<u8> {
    if body.len() <= 4096 {
        return body.to_vec();
    }
    let text = String::from_utf8_lossy(body);
    let events: Vec<&str> = text.split(separator).collect();
    if events.len() <= 14 {
        return body.to_vec();
    }
    let kept: Vec<&str> = events[..10]
        .iter()
        .chain(&events[events.len() - 4..])
        .copied()
        .collect();
    kept.join(separator).into_bytes()
}
