//! MPNet, the encoder of sentence-transformers' all-mpnet-base-v2: BERT's layers, without token
//! types, with positions counted from the padding token, and with a learned bias per head and
//! bucket of relative position added to every attention score. candle has no MPNet; this
//! follows transformers' `modeling_mpnet.py` (checked against a numpy implementation of the
//! same, `tests/reference/make_reference.py`).

use candle_core::{D, DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder, embedding, layer_norm, linear};

/// The fields of an MPNet `config.json` that the encoder needs.
#[derive(Debug, Clone, serde::Deserialize)]
pub(crate) struct MpNetConfig {
    vocab_size: usize,
    pub(crate) hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    pub(crate) max_position_embeddings: usize,
    layer_norm_eps: f64,
    pub(crate) pad_token_id: u32,
    relative_attention_num_buckets: usize,
    #[serde(default = "gelu")]
    pub(crate) hidden_act: String,
}

fn gelu() -> String {
    "gelu".to_owned()
}

/// From this distance on, relative positions share their direction's last bucket (transformers'
/// default, which MPNet's checkpoints were trained with).
const MAX_DISTANCE: f64 = 128.0;

pub(crate) struct MpNetModel {
    word_embeddings: Embedding,
    position_embeddings: Embedding,
    embeddings_norm: LayerNorm,
    relative_attention_bias: Embedding,
    layers: Vec<Layer>,
    heads: usize,
    buckets: usize,
    pad_token_id: u32,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    output: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    dense: Linear,
    output_norm: LayerNorm,
}

impl MpNetModel {
    pub(crate) fn load(vb: VarBuilder<'_>, config: &MpNetConfig) -> Result<Self> {
        // The weights of a bare encoder, or of one inside a task model (`mpnet.` before each).
        let vb = if vb.contains_tensor("mpnet.embeddings.word_embeddings.weight") {
            vb.pp("mpnet")
        } else {
            vb
        };
        let hidden = config.hidden_size;
        let norm = |vb: VarBuilder<'_>| layer_norm(hidden, config.layer_norm_eps, vb);
        let embeddings = vb.pp("embeddings");
        let encoder = vb.pp("encoder");
        let layers = (0..config.num_hidden_layers)
            .map(|index| {
                let vb = encoder.pp(format!("layer.{index}"));
                let attention = vb.pp("attention");
                Ok(Layer {
                    query: linear(hidden, hidden, attention.pp("attn.q"))?,
                    key: linear(hidden, hidden, attention.pp("attn.k"))?,
                    value: linear(hidden, hidden, attention.pp("attn.v"))?,
                    output: linear(hidden, hidden, attention.pp("attn.o"))?,
                    attention_norm: norm(attention.pp("LayerNorm"))?,
                    intermediate: linear(
                        hidden,
                        config.intermediate_size,
                        vb.pp("intermediate.dense"),
                    )?,
                    dense: linear(config.intermediate_size, hidden, vb.pp("output.dense"))?,
                    output_norm: norm(vb.pp("output.LayerNorm"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MpNetModel {
            word_embeddings: embedding(
                config.vocab_size,
                hidden,
                embeddings.pp("word_embeddings"),
            )?,
            position_embeddings: embedding(
                config.max_position_embeddings,
                hidden,
                embeddings.pp("position_embeddings"),
            )?,
            embeddings_norm: norm(embeddings.pp("LayerNorm"))?,
            relative_attention_bias: embedding(
                config.relative_attention_num_buckets,
                config.num_attention_heads,
                encoder.pp("relative_attention_bias"),
            )?,
            layers,
            heads: config.num_attention_heads,
            buckets: config.relative_attention_num_buckets,
            pad_token_id: config.pad_token_id,
        })
    }

    /// The token vectors of a padded batch: `ids` and `mask` are `(texts, tokens)`, `mask` 1 on
    /// a text's tokens and 0 on padding.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (texts, tokens) = ids.dims2()?;
        let device = ids.device();
        // Positions count a text's tokens from the padding token's id on; padding sits at it.
        let mask_f = mask.to_dtype(DType::F32)?;
        let positions = ((mask_f.cumsum(1)? * &mask_f)? + f64::from(self.pad_token_id))?
            .to_dtype(DType::U32)?;
        let mut xs =
            (self.word_embeddings.forward(ids)? + self.position_embeddings.forward(&positions)?)?;
        xs = self.embeddings_norm.forward(&xs)?;

        // One bias per head, query token and key token, the same for every layer and text;
        // padding's keys get the smallest float, as transformers does.
        let buckets: Vec<u32> = (0..tokens)
            .flat_map(|query| (0..tokens).map(move |key| (query, key)))
            .map(|(query, key)| bucket(key as i64 - query as i64, self.buckets))
            .collect();
        let buckets = Tensor::from_vec(buckets, (tokens, tokens), device)?;
        let position_bias = self
            .relative_attention_bias
            .forward(&buckets)?
            .permute((2, 0, 1))?
            .unsqueeze(0)?;
        let padding = ((1.0 - &mask_f)? * f64::from(f32::MIN))?.reshape((texts, 1, 1, tokens))?;
        let bias = position_bias.broadcast_add(&padding)?.contiguous()?;

        for layer in &self.layers {
            xs = layer.forward(&xs, &bias, self.heads)?;
        }
        Ok(xs)
    }
}

/// transformers' `MPNetEncoder.relative_position_bucket` of `relative` (key position minus query
/// position) among `buckets`: half for keys before the query, half for keys after; in each,
/// distances below a quarter of the buckets get one each, longer ones share the rest on a log
/// scale up to [`MAX_DISTANCE`].
fn bucket(relative: i64, buckets: usize) -> u32 {
    let half = (buckets / 2) as i64;
    let direction = if relative > 0 { half } else { 0 };
    let distance = relative.abs();
    let exact = half / 2;
    let within = if distance < exact {
        distance
    } else {
        let scaled = (distance as f32 / exact as f32).ln()
            / (MAX_DISTANCE / exact as f64).ln() as f32
            * (half - exact) as f32;
        (exact + scaled as i64).min(half - 1)
    };
    (direction + within) as u32
}

impl Layer {
    fn forward(&self, xs: &Tensor, bias: &Tensor, heads: usize) -> Result<Tensor> {
        let (texts, tokens, hidden) = xs.dims3()?;
        let size = hidden / heads;
        let split = |linear: &Linear| -> Result<Tensor> {
            linear
                .forward(xs)?
                .reshape((texts, tokens, heads, size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let (query, key, value) = (split(&self.query)?, split(&self.key)?, split(&self.value)?);
        let scores = (query.matmul(&key.t()?)? / (size as f64).sqrt())?.broadcast_add(bias)?;
        let probabilities = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = probabilities
            .matmul(&value)?
            .transpose(1, 2)?
            .contiguous()?
            .flatten_from(D::Minus2)?;
        let xs = self
            .attention_norm
            .forward(&(self.output.forward(&context)? + xs)?)?;
        let inner = self.intermediate.forward(&xs)?.gelu_erf()?;
        self.output_norm
            .forward(&(self.dense.forward(&inner)? + xs)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked out by hand from transformers' formula for 32 buckets.
    #[test]
    fn relative_positions_fall_in_transformers_buckets() {
        let expected = [
            (0, 0),
            (-1, 1),
            (-7, 7),
            (-8, 8),
            (-20, 10),
            (-127, 15),
            (-200, 15),
            (1, 17),
            (20, 26),
            (200, 31),
        ];
        for (relative, expected) in expected {
            assert_eq!(
                bucket(relative, 32),
                expected,
                "relative position {relative}"
            );
        }
    }
}
