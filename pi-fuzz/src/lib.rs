#![doc = include_str!("../README.md")]

// The recorded-stream helpers of `pi-runtime`'s tests: one copy of the event-grammar rules.
#[path = "../../pi-runtime/tests/recorded/mod.rs"]
mod recorded;

mod args;
mod decoders;
pub mod faults;
pub mod generate;
mod partial_json;
mod recorded_seeds;
mod split;
mod sse;

pub use args::{TOOL_NAMES, args_pipeline};
pub use decoders::{
    DECODER_TARGETS, decode_anthropic, decode_google, decode_openai_completions,
    decode_openai_responses,
};
pub use partial_json::partial_json;
pub use recorded_seeds::{Seed, recorded_seeds};
pub use sse::sse;

/// A fuzz target: any bytes in; it panics when an invariant breaks.
pub type Target = fn(&[u8]);

/// Every target by name (the name of its `fuzz/fuzz_targets/<name>.rs` and corpus folder).
pub const TARGETS: [(&str, Target); 7] = [
    ("args_pipeline", args_pipeline),
    ("partial_json", partial_json),
    ("sse", sse),
    DECODER_TARGETS[0],
    DECODER_TARGETS[1],
    DECODER_TARGETS[2],
    DECODER_TARGETS[3],
];
