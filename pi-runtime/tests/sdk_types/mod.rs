//! Our request bodies checked by the APIs' own Node SDKs: TypeScript (`tsc --strict`) must
//! accept each body as a literal of the SDK's request type, so every field we send, and every
//! value of it, is one the SDK declares. The SDKs, TypeScript and Node come from
//! `.ci/install-test-deps` (folder: env `PI_TEST_DEPS`, default
//! `~/.cache/pi-tool-test-deps`), as do recordings that only an npm package carries; without
//! them a test is skipped, or fails when env `CI` is set.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// An SDK's request type: where it is declared and what it is called.
pub struct RequestType {
    /// The module to import it from.
    pub module: &'static str,
    /// Its name there.
    pub name: &'static str,
    /// A file of the package whose presence says it is installed (under `node_modules`).
    pub marker: &'static str,
}

/// OpenAI's Responses request (`openai` 7.59.0).
pub const OPENAI_RESPONSES: RequestType = RequestType {
    module: "openai/resources/responses/responses",
    name: "ResponseCreateParamsStreaming",
    marker: "openai/resources/responses/responses.d.ts",
};

/// Anthropic's Messages request (`@anthropic-ai/sdk` 1.10.0).
pub const ANTHROPIC_MESSAGES: RequestType = RequestType {
    module: "@anthropic-ai/sdk/resources/messages/messages",
    name: "MessageCreateParamsStreaming",
    marker: "@anthropic-ai/sdk/resources/messages/messages.d.ts",
};

/// Bedrock's ConverseStream request (`@aws-sdk/client-bedrock-runtime` 3.1178.0).
pub const BEDROCK_CONVERSE_STREAM: RequestType = RequestType {
    module: "@aws-sdk/client-bedrock-runtime",
    name: "ConverseStreamRequest",
    marker: "@aws-sdk/client-bedrock-runtime/dist-types/models/models_0.d.ts",
};

/// The test dependencies' folder.
pub fn folder() -> PathBuf {
    match std::env::var_os("PI_TEST_DEPS") {
        Some(folder) => PathBuf::from(folder),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/pi-tool-test-deps"),
    }
}

/// Whether what a test needs is there; when not, fails in CI and says so otherwise.
fn present(what: &str, found: bool) -> bool {
    if found {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is missing from {}: run .ci/install-test-deps",
        folder().display()
    );
    eprintln!("skipped: {what} is missing (run .ci/install-test-deps)");
    false
}

/// The folder, when it has Node, TypeScript and the SDK of `request`.
pub fn with_sdk(request: &RequestType) -> Option<PathBuf> {
    let folder = folder();
    let modules = folder.join("node_modules");
    let found = folder.join("node22").exists()
        && modules.join(request.marker).exists()
        && modules.join("typescript/bin/tsc").exists();
    present(
        &format!("Node, TypeScript or the SDK of {}", request.name),
        found,
    )
    .then_some(folder)
}

/// A file the test dependencies hold (a recording from an npm package), by its path in the
/// folder.
pub fn file(path: &str) -> Option<PathBuf> {
    let file = folder().join(path);
    present(path, file.is_file()).then_some(file)
}

/// Runs `tsc --strict --noEmit` on the bodies as literals of `request`'s type; its report when
/// it refuses them.
pub fn type_check(deps: &Path, request: &RequestType, bodies: &[&Value]) -> Result<(), String> {
    let import = format!(
        "import type {{ {} }} from \"{}\";",
        request.name, request.module
    );
    let literals: Vec<String> = bodies.iter().map(|body| body.to_string()).collect();
    type_check_literals(deps, request.name, &import, request.name, &literals)
}

/// Runs `tsc --strict --noEmit` on TypeScript literals as values of `type_expr` (a type the
/// `import` lines bring in, or one built from them); its report when it refuses them.
pub fn type_check_literals(
    deps: &Path,
    label: &str,
    import: &str,
    type_expr: &str,
    literals: &[String],
) -> Result<(), String> {
    // Inside the folder, so the SDK resolves from its `node_modules`.
    let dir = deps.join(format!(
        "type-check-{label}-{}-{}",
        std::process::id(),
        NEXT_FILE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut source = format!("{import}\n");
    for (i, literal) in literals.iter().enumerate() {
        source.push_str(&format!("export const body{i}: {type_expr} = {literal};\n"));
    }
    let file = dir.join("bodies.ts");
    std::fs::write(&file, source).unwrap();
    let run = std::process::Command::new(deps.join("node22"))
        .arg(deps.join("node_modules/typescript/bin/tsc"))
        .args([
            "--noEmit",
            "--strict",
            "--skipLibCheck",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
        ])
        .arg(&file)
        .output()
        .expect("node runs");
    let _ = std::fs::remove_dir_all(&dir);
    if run.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&run.stdout).into_owned())
    }
}

/// Checks the bodies with Mistral's own SDK (`mistral_wire.mjs`, whose comment says how); its
/// report when it refuses one, `None` when the SDK is missing.
pub fn mistral_check(bodies: &[&Value]) -> Option<Result<(), String>> {
    let sdk =
        "node_modules/@mistralai/mistralai/esm/models/components/chatcompletionstreamrequest.js";
    file(sdk)?;
    let node = file("node22")?;
    let bodies_file = std::env::temp_dir().join(format!(
        "pi-mistral-bodies-{}-{}.json",
        std::process::id(),
        NEXT_FILE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::write(&bodies_file, serde_json::to_vec(bodies).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk_types/mistral_wire.mjs");
    let run = std::process::Command::new(node)
        .arg(script)
        .arg(folder())
        .arg(&bodies_file)
        .output()
        .expect("node runs");
    let _ = std::fs::remove_file(&bodies_file);
    Some(if run.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        ))
    })
}

/// Numbers the bodies files of one test process (tests run in parallel).
static NEXT_FILE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
