//! A whole GGUF file through the header reader. See `taper::fuzzing::gguf_header`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taper::fuzzing::gguf_header(data));
