//! Numbers against references, and nothing else, so that scripts/test-arm64 can run this binary
//! under qemu: `QLinear` against f64 and candle, and the decoder on tiny random-weight models
//! against llama.cpp's logits.

#[path = "../support/common.rs"]
mod common;

mod linear;
mod tiny;
