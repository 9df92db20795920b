//! `taper bench` in one binary: the command end to end, and the shape-only GGUF files it
//! measures without weights.

#[path = "../support/common.rs"]
mod common;

mod cli;
mod shape;
