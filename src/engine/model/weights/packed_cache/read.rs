//! Reading a matrix back: into fresh anonymous memory in 2 MiB pages (where decoding wants
//! it, as a repack would have put it), chunk by chunk in parallel, each chunk hashed while it
//! is still in the cache.

use super::format::{self, Entry, CHUNK};
use crate::engine::model::weights::anon::anon_pages;
use memmap2::Mmap;
use rayon::prelude::*;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The matrix `entry` describes, read from `file`, or `None` when it cannot be read or its
/// bytes are not the ones written (it is then repacked).
pub fn matrix(file: &File, entry: &Entry) -> Option<Mmap> {
    let len = usize::try_from(entry.len).ok()?;
    let mut map = anon_pages(len).ok()?;
    let digests: Option<Vec<u64>> = map[..len]
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map(|(i, chunk)| {
            let at = entry.offset + (i * CHUNK) as u64;
            file.read_exact_at(chunk, at).ok()?;
            Some(xxhash_rust::xxh3::xxh3_64(chunk))
        })
        .collect();
    (format::combine(&digests?) == entry.hash)
        .then(|| map.make_read_only().ok())
        .flatten()
}
