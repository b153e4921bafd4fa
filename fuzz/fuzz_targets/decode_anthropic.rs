#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_fuzz::decode_anthropic(data));
