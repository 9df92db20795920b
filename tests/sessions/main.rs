//! Saved conversations in one binary: saves that survive kill -9, and `taper sessions` /
//! `taper export` on fixture files.

mod atomic;
mod cli;
