//! JSON Schemas, Lark grammars and regexes through the grammar compiler and a few mask steps.
//! See `taper::fuzzing::constraint`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| taper::fuzzing::constraint(data));
