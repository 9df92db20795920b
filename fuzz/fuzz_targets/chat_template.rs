//! A hostile chat template rendering a fuzzed conversation. See `taper::fuzzing::chat_template`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taper::fuzzing::chat_template(data));
