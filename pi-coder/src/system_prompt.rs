//! The system prompt as pi 0.73.1 builds it (`core/system-prompt.ts`): role, the tools with
//! their one-line snippets, guidelines gathered from the tools, the project's context files
//! (`AGENTS.md` / `CLAUDE.md`, loaded as pi's `resource-loader.ts` does), then the date and the
//! working directory last.

use std::path::{Path, PathBuf};

/// pi's tool order (`createAllToolDefinitions`): the order tools are offered and listed in.
pub const PI_TOOL_ORDER: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// The names of the context files pi looks for in a directory, in its order of preference.
pub const CONTEXT_FILE_NAMES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];

/// A project instruction file put into the system prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextFile {
    /// Where it was read from (shown to the model as its header).
    pub path: PathBuf,
    /// Its text.
    pub content: String,
}

/// pi's `promptSnippet` of a built-in tool: its line under "Available tools".
fn snippet(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "read" => "Read file contents",
        "bash" => "Execute bash commands (ls, grep, find, etc.)",
        "edit" => {
            "Make precise file edits with exact text replacement, including multiple disjoint edits in one call"
        }
        "write" => "Create or overwrite files",
        "grep" => "Search file contents for patterns (respects .gitignore)",
        "find" => "Find files by glob pattern (respects .gitignore)",
        "ls" => "List directory contents",
        _ => return None,
    })
}

/// pi's `promptGuidelines` of a built-in tool.
fn guidelines(tool: &str) -> &'static [&'static str] {
    match tool {
        "read" => &["Use read to examine files instead of cat or sed."],
        "edit" => &[
            "Use edit for precise changes (edits[].oldText must match exactly)",
            "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of multiple edit calls",
            "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
            "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.",
        ],
        "write" => &["Use write only for new files or complete rewrites."],
        _ => &[],
    }
}

/// Orders tool names as pi offers them: the built-ins in [`PI_TOOL_ORDER`], then the others
/// (MCP tools, tools of your own) by name.
pub fn pi_order<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_by_key(|name| {
        (
            PI_TOOL_ORDER
                .iter()
                .position(|n| n == name)
                .unwrap_or(PI_TOOL_ORDER.len()),
            *name,
        )
    });
    names.dedup();
    names
}

/// What goes into a system prompt besides the tools.
#[derive(Clone, Debug, Default)]
pub struct PromptParts {
    /// `--system-prompt`: replaces the role, tools and guidelines (context files, date and
    /// working directory are still added, as in pi).
    pub custom: Option<String>,
    /// `--append-system-prompt` texts, each appended after the guidelines.
    pub append: Vec<String>,
    /// The context files, in order.
    pub context_files: Vec<ContextFile>,
    /// The date line's value, `YYYY-MM-DD` (today in local time when `None`).
    pub date: Option<String>,
}

/// pi's system prompt for `tools` (in the order given) in `cwd`.
pub fn build(tools: &[&str], cwd: &Path, parts: &PromptParts) -> String {
    let mut prompt = match &parts.custom {
        Some(custom) => custom.clone(),
        None => default_prompt(tools),
    };
    let append: Vec<&str> = parts
        .append
        .iter()
        .map(String::as_str)
        .filter(|a| !a.is_empty())
        .collect();
    if !append.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&append.join("\n\n"));
    }
    if !parts.context_files.is_empty() {
        prompt
            .push_str("\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n");
        for file in &parts.context_files {
            prompt.push_str(&format!(
                "## {}\n\n{}\n\n",
                file.path.display(),
                file.content
            ));
        }
    }
    let date = parts
        .date
        .clone()
        .unwrap_or_else(|| chrono::Local::now().format("%Y-%m-%d").to_string());
    prompt.push_str(&format!("\nCurrent date: {date}"));
    prompt.push_str(&format!(
        "\nCurrent working directory: {}",
        cwd.display().to_string().replace('\\', "/")
    ));
    prompt
}

fn default_prompt(tools: &[&str]) -> String {
    let listed: Vec<String> = tools
        .iter()
        .filter_map(|name| Some(format!("- {name}: {}", snippet(name)?)))
        .collect();
    let tools_list = if listed.is_empty() {
        "(none)".to_owned()
    } else {
        listed.join("\n")
    };
    let has = |name: &str| tools.contains(&name);
    let mut lines: Vec<&str> = Vec::new();
    let mut add = |line: &'static str| {
        if !lines.contains(&line) {
            lines.push(line);
        }
    };
    if has("bash") && !has("grep") && !has("find") && !has("ls") {
        add("Use bash for file operations like ls, rg, find");
    } else if has("bash") {
        add(
            "Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)",
        );
    }
    for tool in tools {
        for line in guidelines(tool) {
            add(line);
        }
    }
    add("Be concise in your responses");
    add("Show file paths clearly when working with files");
    let guidelines: Vec<String> = lines.iter().map(|l| format!("- {l}")).collect();
    format!(
        "You are an expert coding assistant operating inside pi, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.\n\nAvailable tools:\n{tools_list}\n\nIn addition to the tools above, you may have access to other custom tools depending on the project.\n\nGuidelines:\n{}",
        guidelines.join("\n")
    )
}

/// The context files as pi loads them (`loadProjectContextFiles`): the one in pi's agent
/// directory (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`) first, then one per directory from
/// the filesystem root down to `cwd`. In each directory the first of [`CONTEXT_FILE_NAMES`]
/// that exists is taken. A file that cannot be read is skipped with a warning, as in pi.
pub fn load_context_files(
    agent_dir: &Path,
    cwd: &Path,
    mut warn: impl FnMut(String),
) -> Vec<ContextFile> {
    let mut files = Vec::new();
    if let Some(global) = context_file_in(agent_dir, &mut warn) {
        files.push(global);
    }
    let mut ancestors: Vec<ContextFile> = Vec::new();
    for dir in cwd.ancestors() {
        if let Some(file) = context_file_in(dir, &mut warn)
            && !files.iter().any(|f| f.path == file.path)
        {
            ancestors.push(file);
        }
    }
    ancestors.reverse();
    files.extend(ancestors);
    files
}

fn context_file_in(dir: &Path, warn: &mut impl FnMut(String)) -> Option<ContextFile> {
    for name in CONTEXT_FILE_NAMES {
        let path = dir.join(name);
        if !path.exists() {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                return Some(ContextFile {
                    content: String::from_utf8_lossy(&bytes).into_owned(),
                    path,
                });
            }
            Err(err) => warn(format!("Could not read {}: {err}", path.display())),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_put_in_pi_order() {
        assert_eq!(
            pi_order(["ls", "fs__read_file", "write", "read", "grep", "bash"]),
            ["read", "bash", "write", "grep", "ls", "fs__read_file"]
        );
    }
}
