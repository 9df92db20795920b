//! Saved conversations in one binary: saves that survive kill -9, and `taper sessions` /
//! `taper export` on fixture files; `sessions search`, `rename` and `rm`.

mod atomic;
mod cli;
mod edit;
mod find;
