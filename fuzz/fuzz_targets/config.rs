//! config.toml text through the config reader. See `taper::fuzzing::config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taper::fuzzing::config(data));
