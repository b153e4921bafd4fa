//! The stable driver of the fuzz targets (cargo-fuzz runs the same functions on nightly): every
//! stored corpus input, every regression and a seed of every recorded provider stream replays,
//! then each target runs on seeded structured inputs. `PI_FUZZ_INPUTS=<n>` changes how many per
//! target (default 400), `PI_FUZZ_SEED=<n>` the seed (default fixed, so a failure reproduces).
//!
//! The recordings are read from `shared/recordings/` beside the repository (or
//! `$PI_RECORDINGS`); without them the tests that need them say so and skip, or fail in CI.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use fastrand::Rng;
use pi_fuzz::{Seed, TARGETS, TOOL_NAMES, generate, recorded_seeds};
use serde_json::{Value, json};

/// Where cargo-fuzz keeps a target's corpus.
fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

/// Inputs that once broke a target (each also has a named test below).
fn regressions(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(target)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    paths.sort();
    paths
}

fn target(name: &str) -> fn(&[u8]) {
    TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no target {name}"))
}

/// Runs `input` through the target, naming the input when an invariant breaks.
fn run(name: &str, what: &str, input: &[u8]) {
    let outcome = std::panic::catch_unwind(|| target(name)(input));
    if outcome.is_err() {
        panic!("{name}: {what} failed; input (hex): {}", hex(input));
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn inputs_per_target() -> usize {
    std::env::var("PI_FUZZ_INPUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(400)
}

fn seed() -> u64 {
    std::env::var("PI_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x5EED_F022)
}

/// The seeds made from the recorded streams, read once per test process.
fn recordings() -> &'static [Seed] {
    static SEEDS: OnceLock<Vec<Seed>> = OnceLock::new();
    SEEDS.get_or_init(recorded_seeds)
}

#[test]
fn every_target_has_a_corpus() {
    for (name, _) in TARGETS {
        assert!(!files(&corpus(name)).is_empty(), "{name}: empty corpus");
    }
}

#[test]
fn stored_corpora_and_regressions_replay() {
    for (name, _) in TARGETS {
        for path in files(&corpus(name))
            .into_iter()
            .chain(files(&regressions(name)))
        {
            let input = std::fs::read(&path).expect("a corpus file");
            run(name, &path.display().to_string(), &input);
        }
    }
}

#[test]
fn recorded_streams_replay() {
    let seeds = recordings();
    if seeds.is_empty() {
        return;
    }
    for (name, _) in pi_fuzz::DECODER_TARGETS {
        assert!(
            seeds.iter().filter(|s| s.target == name).count() >= 20,
            "{name}: recorded seeds"
        );
    }
    for seed in seeds {
        run(seed.target, &seed.name, &seed.input);
    }
}

/// Seeded mutations of a target's stored corpus and of its recorded seeds, plus what `fresh`
/// makes from nothing.
fn seeded(
    name: &str,
    mutate: impl Fn(&mut Rng, &[u8]) -> Vec<u8>,
    fresh: impl Fn(&mut Rng) -> Vec<u8>,
) {
    let recorded = recordings().iter().filter(|s| s.target == name);
    let stored: Vec<Vec<u8>> = files(&corpus(name))
        .iter()
        .map(|p| std::fs::read(p).expect("a corpus file"))
        .chain(recorded.map(|s| s.input.clone()))
        .filter(|input| !input.is_empty())
        .collect();
    let mut rng = Rng::with_seed(seed());
    for round in 0..inputs_per_target() {
        let input = if stored.is_empty() || rng.usize(0..4) == 0 {
            fresh(&mut rng)
        } else {
            {
                let pick = rng.usize(0..stored.len());
                mutate(&mut rng, &stored[pick])
            }
        };
        run(name, &format!("seeded input {round}"), &input);
    }
}

/// A mode/selector byte followed by `body`.
fn with_head(head: u8, body: impl AsRef<[u8]>) -> Vec<u8> {
    let mut input = vec![head];
    input.extend_from_slice(body.as_ref());
    input
}

#[test]
fn args_pipeline_on_seeded_inputs() {
    seeded(
        "args_pipeline",
        |rng, stored| {
            let (head, body) = stored.split_first().expect("non-empty");
            let text = String::from_utf8_lossy(body);
            let value = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.into()));
            let head = if rng.usize(0..8) == 0 {
                rng.u8(..)
            } else {
                *head
            };
            with_head(head, {
                let mutated = generate::mutate(rng, value);
                generate::json_text(rng, &mutated)
            })
        },
        |rng| {
            let value = if rng.bool() {
                generate::object(rng)
            } else {
                generate::value(rng, 3)
            };
            with_head(rng.u8(..), generate::json_text(rng, &value))
        },
    );
}

#[test]
fn partial_json_on_seeded_inputs() {
    seeded(
        "partial_json",
        |rng, stored| {
            let text = String::from_utf8_lossy(&stored[1..]);
            match serde_json::from_str::<Value>(&text) {
                Ok(value) => with_head(rng.u8(..), {
                    let mutated = generate::mutate(rng, value);
                    generate::json_text(rng, &mutated)
                }),
                Err(_) => with_head(rng.u8(..), &stored[1..]),
            }
        },
        |rng| {
            let value = generate::value(rng, 4);
            with_head(rng.u8(..), generate::json_text(rng, &value))
        },
    );
}

#[test]
fn sse_on_seeded_inputs() {
    seeded(
        "sse",
        |rng, stored| with_head(rng.u8(..), generate::mutate_lines(rng, &stored[1..])),
        |rng| with_head(rng.u8(..), generate::sse_bytes(rng)),
    );
}

#[test]
fn decoders_on_seeded_inputs() {
    for (name, _) in pi_fuzz::DECODER_TARGETS {
        seeded(
            name,
            |rng, stored| {
                // Keep the framing bit of the stored input, draw a new piece size.
                let head = (stored[0] & 1) | (rng.u8(..) & !1);
                with_head(head, generate::mutate_lines(rng, &stored[1..]))
            },
            |rng| {
                let events: Vec<String> = (0..rng.usize(0..8))
                    .map(|_| generate::object(rng).to_string())
                    .collect();
                with_head(rng.u8(..) | 1, events.join("\n"))
            },
        );
    }
}

/// Writes the seed corpora: the argument examples of every tool, JSON texts and event streams
/// into `fuzz/corpus/<target>/`; and the seeds of the recorded provider streams into
/// `fuzz/work/<target>/`, libFuzzer's working folder (not committed: the recordings are other
/// projects' files). Run once by hand (`cargo test -p pi-fuzz --test targets -- --ignored
/// write_seed_corpus`); libFuzzer grows the corpora from there.
#[test]
#[ignore = "writes fuzz/corpus and fuzz/work; run by hand"]
fn write_seed_corpus() {
    let write_into = |dir: PathBuf, name: &str, input: &[u8]| {
        std::fs::create_dir_all(&dir).expect("the corpus folder");
        std::fs::write(dir.join(name), input).expect("a corpus file");
    };
    let write = |target: &str, name: &str, input: Vec<u8>| write_into(corpus(target), name, &input);
    let work = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/work");
    for seed in recordings() {
        write_into(work.join(seed.target), &seed.name, &seed.input);
    }
    let examples = [
        (
            "integers",
            json!({"a8": -5, "a16": 300, "a32": -70000, "a64": 9007199254740993i64, "b8": 255, "b16": "7", "nz": -3, "nzu": 5, "a128": 1}),
        ),
        (
            "scalars",
            json!({"name": "Paris", "flag": "true", "ratio": "2.5", "small": 0.1, "letter": "x", "days": 3, "code": "ab"}),
        ),
        (
            "containers",
            json!({"items": [{"name": "a", "tags": ["x"]}], "matrix": [[1, 2], [3]], "env": {"A": null, "B": "b"}, "counts": {"x": 1}, "pair": [1, "two", true], "rgb": [1, 2, 3], "anything": {"k": [null]}}),
        ),
        (
            "enums",
            json!({"shape": {"kind": "circle", "radius": 2}, "adjacent": {"t": "Pair", "c": [1, true]}, "external": {"Move": {"x": 1, "y": 2}}, "loose": "words", "unit": "celsius"}),
        ),
        (
            "records",
            json!({"options": {"retryCount": 2, "flatCount": 1, "flat_note": "n"}, "tree": {"label": "r", "children": [{"label": "c", "children": []}]}, "type": "t"}),
        ),
        ("nothing", json!({})),
        ("missing_tool", json!({"x": 1})),
    ];
    for (name, arguments) in examples {
        let index = TOOL_NAMES.iter().position(|n| *n == name).expect("a tool") as u8;
        write(
            "args_pipeline",
            &format!("{name}-valid.json"),
            with_head(index, arguments.to_string()),
        );
        write(
            "args_pipeline",
            &format!("{name}-as-string.json"),
            with_head(index, Value::String(arguments.to_string()).to_string()),
        );
        write(
            "args_pipeline",
            &format!("{name}-cut.json"),
            with_head(
                index,
                &arguments.to_string()[..arguments.to_string().len() / 2],
            ),
        );
        write(
            "partial_json",
            &format!("{name}.json"),
            with_head(
                3,
                serde_json::to_string_pretty(&arguments).unwrap_or_default(),
            ),
        );
    }
    write(
        "partial_json",
        "escapes.json",
        with_head(
            1,
            r#"{"a": ["x\"y\u00e9\\", 1.5e-3, true, null, {}], "b": {"c": [[]]}}"#,
        ),
    );
    write(
        "partial_json",
        "raw-newline.json",
        with_head(2, "{\"text\": \"line1\nline2 \\d\"}"),
    );
    write(
        "sse",
        "line-ends.sse",
        with_head(
            3,
            ": comment\r\nevent: a\r\ndata: one\r\ndata: two\r\n\r\ndata:{\"x\":\"é\"}\n\nid: 3\rdata: last\r\r",
        ),
    );
}

/// Found by the seeded driver: `[ ]` (an empty array with whitespace inside) broke the
/// partial-JSON scan, so a complete array was never complete and nothing after it streamed.
#[test]
fn regression_empty_array_with_whitespace() {
    run("partial_json", "[\\n]", b"\x80[\n]");
    run(
        "partial_json",
        "nested",
        b"\x01{\"a\": [ ], \"b\": [[\t], 1]}",
    );
}

/// Found by cargo-fuzz (`sse`): unframed text that filled its 4 KiB bound exactly, which the
/// target's own check refused by one byte (`< 4096`); the parser keeps at most 4,096 bytes.
#[test]
fn regression_unframed_text_at_its_bound() {
    let path = regressions("sse").join("unframed-text-of-exactly-4096-bytes");
    let input = std::fs::read(path).expect("the regression input");
    run("sse", "unframed text at its bound", &input);
}

/// Found by cargo-fuzz (`args_pipeline`): arguments nested 70 levels deep were refused by the
/// depth limit, an error the target did not yet accept (it expected a validation report).
#[test]
fn regression_arguments_deeper_than_the_limit() {
    let path = regressions("args_pipeline").join("arguments-deeper-than-the-limit");
    let input = std::fs::read(path).expect("the regression input");
    run("args_pipeline", "arguments deeper than the limit", &input);
}

/// Found by cargo-fuzz (`partial_json`): ` [\n ]` split after its leading space, whose first
/// prefix (whitespace alone) reads as `{}`, the documented value of empty text, which the
/// target took for a value outside the final array.
#[test]
fn regression_whitespace_before_an_array() {
    let path = regressions("partial_json").join("whitespace-before-an-array");
    let input = std::fs::read(path).expect("the regression input");
    run("partial_json", "whitespace before an array", &input);
}

/// Found by the seeded run (`decode_openai_responses`): a server item (a `program`) still open
/// when a function call began and ended. The item's index was taken but announced only at its
/// end, so the call's events pointed past the blocks a listener had, and `apply` panicked.
#[test]
fn regression_a_server_item_open_while_a_call_streams() {
    let lines = [
        r#"{"type":"response.created","response":{"id":"resp_1","output":[]}}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"cm_1","type":"program","call_id":"call_p","code":""}}"#,
        r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_f","name":"lookup","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":1,"item_id":"fc_1","delta":"{\"sku\":\"a\"}"}"#,
        r#"{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_f","name":"lookup","arguments":"{\"sku\":\"a\"}"}}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"cm_1","type":"program","call_id":"call_p","code":"await tools.lookup({sku: 'a'})"}}"#,
        r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[]}}"#,
    ];
    for mode in [1u8, 7, 255] {
        let mut input = vec![mode];
        input.extend_from_slice(lines.join("\n").as_bytes());
        run(
            "decode_openai_responses",
            "a server item open while a call streams",
            &input,
        );
    }
}
