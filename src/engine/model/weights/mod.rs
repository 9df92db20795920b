//! The weights of a model: the mapped GGUF file and what is built on it.
//!
//! Imports go one way, from the file up: [`pages`] (the arena repacked matrices are written
//! into, in 2 MiB pages) ← [`packed_cache`] (repacked matrices kept on disk between loads) ←
//! [`mapped`] (the mapped file, tensors by name) ← [`repack`] (matrices repacked at load),
//! [`matmul`] (the parallel quantized matmul) ← [`linear`] (`QLinear`, and
//! `WeightFile::linear` that builds one from the file) ← [`embedding`] (token tables looked up
//! row by row, `WeightFile::rows`, and the lookup through a repacked output head). Nothing in
//! [`mapped`] knows what is built on it.

pub mod embedding;
pub mod linear;
pub mod mapped;
mod matmul;
pub mod packed_cache;
mod pages;
mod repack;

pub use mapped::{qstorage, MappedBytes, WeightFile};
