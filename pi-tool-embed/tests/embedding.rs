//! The models against a reference: the embeddings of an independent numpy implementation of
//! all-MiniLM-L6-v2 and all-mpnet-base-v2 (`tests/reference/make_reference.py`, its output
//! committed in `tests/fixtures/minilm_reference.json` and `mpnet_reference.json`;
//! sentence-transformers 6.3.0 computes the same vectors within 2.5e-7 for MiniLM and 2.9e-7
//! for MPNet: `tests/reference/check_with_sentence_transformers.py`), and how cosines behave.

mod common;

use pi_tool_embed::{EmbedError, EmbeddingModel, PACKAGE_MODEL_DIR, cosine};
use serde::Deserialize;

use common::{model, mpnet_model};

#[derive(Deserialize)]
struct Reference {
    text: String,
    embedding: Vec<f32>,
}

fn references(fixture: &str) -> Vec<Reference> {
    serde_json::from_str(fixture).unwrap()
}

fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn embeddings_equal_the_numpy_reference() {
    let Some(model) = model() else { return };
    assert_eq!(model.dimension(), 384);
    assert_eq!(model.max_tokens(), 256);
    equal_the_reference(&model, include_str!("fixtures/minilm_reference.json"));
}

/// MPNet runs on candle's parts but not its models: the relative position buckets, positions
/// counted from the padding token, and padding in a batch are this crate's own.
#[test]
fn mpnet_embeddings_equal_the_numpy_reference() {
    let Some(model) = mpnet_model() else { return };
    assert_eq!(model.dimension(), 768);
    assert_eq!(model.max_tokens(), 384);
    equal_the_reference(&model, include_str!("fixtures/mpnet_reference.json"));
}

fn equal_the_reference(model: &EmbeddingModel, fixture: &str) {
    let references = references(fixture);
    let texts: Vec<&str> = references.iter().map(|r| r.text.as_str()).collect();
    // In one batch (padded to the longest) and one by one: the same vectors.
    let batch = model.embed(&texts).unwrap();
    for (reference, vector) in references.iter().zip(&batch) {
        let one = model.embed_one(&reference.text).unwrap();
        for got in [vector, &one] {
            let difference = largest_difference(got, &reference.embedding);
            assert!(
                difference < 1e-4,
                "{:?}: differs by {difference}",
                reference.text
            );
        }
    }
}

#[test]
fn the_same_sentence_is_cosine_1_and_a_paraphrase_is_closer_than_an_unrelated_one() {
    let Some(model) = model() else { return };
    let vectors = model
        .embed(&[
            "Delete the draft I wrote yesterday.",
            "Delete the draft I wrote yesterday.",
            "Remove the unsent email from yesterday.",
            "What is the capital of Australia?",
        ])
        .unwrap();
    for v in &vectors {
        let length: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((length - 1.0).abs() < 1e-5, "length {length}");
    }
    assert!((cosine(&vectors[0], &vectors[1]) - 1.0).abs() < 1e-5);
    let paraphrase = cosine(&vectors[0], &vectors[2]);
    let unrelated = cosine(&vectors[0], &vectors[3]);
    assert!(
        paraphrase > unrelated + 0.3,
        "paraphrase {paraphrase}, unrelated {unrelated}"
    );
}

#[test]
fn a_text_past_the_models_length_is_read_up_to_it() {
    let Some(model) = model() else { return };
    let huge = "invoices and payments of the last quarter ".repeat(30_000);
    let start = &huge[..4_000];
    let a = model.embed_one(&huge).unwrap();
    let b = model.embed_one(start).unwrap();
    assert!(largest_difference(&a, &b) < 1e-5);
    assert!(model.embed(&[]).unwrap().is_empty());
}

/// Files that are there but not a model: an error naming the file, never a panic.
#[test]
fn a_broken_model_folder_is_an_error() {
    let dir = std::env::temp_dir().join(format!("pi-tool-embed-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.safetensors"), b"not safetensors").unwrap();
    std::fs::write(dir.join("tokenizer.json"), b"{}").unwrap();
    std::fs::write(dir.join("config.json"), b"{\"hidden_size\": 4}").unwrap();
    let err = EmbeddingModel::from_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, EmbedError::File { path, .. } if path.ends_with("config.json")),
        "{err}"
    );

    let config = r#"{"vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1, "num_attention_heads": 1,
        "intermediate_size": 8, "hidden_act": "gelu", "hidden_dropout_prob": 0.0,
        "max_position_embeddings": 8, "type_vocab_size": 2, "initializer_range": 0.02,
        "layer_norm_eps": 1e-12, "pad_token_id": 0, "model_type": "bert"}"#;
    std::fs::write(dir.join("config.json"), config).unwrap();
    let err = EmbeddingModel::from_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, EmbedError::File { path, .. } if path.ends_with("model.safetensors")),
        "{err}"
    );

    std::fs::write(
        dir.join("config.json"),
        config.replace("\"bert\"", "\"gpt2\""),
    )
    .unwrap();
    let err = EmbeddingModel::from_dir(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Unsupported { .. }), "{err}");

    // MPNet: its own fields are required, and only its GELU runs.
    std::fs::write(
        dir.join("config.json"),
        config.replace("\"bert\"", "\"mpnet\""),
    )
    .unwrap();
    let err = EmbeddingModel::from_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, EmbedError::File { path, .. } if path.ends_with("config.json")),
        "{err}"
    );
    let mpnet = config
        .replace(
            "\"bert\"",
            "\"mpnet\", \"relative_attention_num_buckets\": 32",
        )
        .replace("\"gelu\"", "\"relu\"");
    std::fs::write(dir.join("config.json"), &mpnet).unwrap();
    let err = EmbeddingModel::from_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, EmbedError::Unsupported { message, .. } if message.contains("relu")),
        "{err}"
    );
    std::fs::write(
        dir.join("config.json"),
        mpnet.replace("\"relu\"", "\"gelu\""),
    )
    .unwrap();
    let err = EmbeddingModel::from_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, EmbedError::File { path, .. } if path.ends_with("model.safetensors")),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `from_python_package` finds the model under the folder pip installed the package into.
#[test]
fn the_model_loads_from_the_python_packages_folder() {
    let Some(model) = model() else { return };
    let dir = common::model_dir();
    let Some(packages) = dir
        .ancestors()
        .nth(2)
        .filter(|p| p.join(PACKAGE_MODEL_DIR) == dir)
    else {
        eprintln!(
            "skipped: {} is not inside a pip --target folder",
            dir.display()
        );
        return;
    };
    let loaded = EmbeddingModel::from_python_package(packages).unwrap();
    assert_eq!(loaded.dimension(), model.dimension());
    let text = "remove an old draft";
    let difference = largest_difference(
        &loaded.embed_one(text).unwrap(),
        &model.embed_one(text).unwrap(),
    );
    assert!(difference < 1e-6, "{difference}");
    let err = EmbeddingModel::from_python_package(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::MissingFile { .. }), "{err}");
}
