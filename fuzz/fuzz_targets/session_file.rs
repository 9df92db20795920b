//! Saved session files through the session reader. See `taper::fuzzing::session_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taper::fuzzing::session_file(data));
