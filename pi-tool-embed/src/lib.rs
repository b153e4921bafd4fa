#![doc = include_str!("../README.md")]
#![doc(test(attr(deny(warnings), allow(dead_code))))]

mod error;
mod fusion;
mod model;
mod mpnet;
mod ranker;
mod tool_text;

pub use error::EmbedError;
pub use model::{EmbeddingModel, PACKAGE_MODEL_DIR, cosine};
pub use ranker::{DEFAULT_EMBEDDING_WEIGHT, EmbeddingRanker};
