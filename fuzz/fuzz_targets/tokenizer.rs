//! A vocabulary written to GGUF, rebuilt into a tokenizer, then text encoded and ids decoded. See `taper::fuzzing::tokenizer`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taper::fuzzing::tokenizer(data));
