//! The cache file's bytes: a magic, the index's length, the index (JSON: the key and, per
//! matrix, its layout, place and hash), then each matrix at a page-aligned offset.
//!
//! A matrix's hash is taken over fixed chunks ([`CHUNK`]) so that reading it back can check
//! the chunks in parallel: XXH3 of each chunk, then XXH3 of those digests in order.

use super::key::Key;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::unix::fs::FileExt;

const MAGIC: &[u8; 8] = b"TAPERPK\x01";
/// Bytes before the index: the magic and the index's length.
const PREAMBLE: usize = 16;
/// The index of a model with thousands of matrices is some hundreds of kilobytes; anything
/// claiming more is not ours.
const MAX_INDEX: u64 = 64 << 20;
/// Where matrices start: a page boundary.
pub const ALIGN: u64 = 4096;
/// The hash's unit (and the unit a matrix is read in).
pub const CHUNK: usize = 4 << 20;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Index {
    pub key: Key,
    /// [`CHUNK`] when written; a file with another chunk is not read.
    pub chunk: usize,
    pub entries: Vec<Entry>,
}

/// One repacked matrix in the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The tensor's name in the model file.
    pub name: String,
    /// The layout it was repacked into (its `Debug` form).
    pub layout: String,
    pub offset: u64,
    pub len: u64,
    pub hash: u64,
}

/// The hash of `bytes` as the file stores it, on the calling thread only (the writer runs
/// beside decoding and leaves the compute pool alone).
pub fn hash(bytes: &[u8]) -> u64 {
    let digests: Vec<u64> = bytes
        .chunks(CHUNK)
        .map(xxhash_rust::xxh3::xxh3_64)
        .collect();
    combine(&digests)
}

/// The hash of a matrix from its chunks' digests, in order.
pub fn combine(digests: &[u64]) -> u64 {
    let bytes: Vec<u8> = digests.iter().flat_map(|d| d.to_le_bytes()).collect();
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// The preamble and index as written at the start of the file, and where the first matrix
/// may start.
pub fn encode(index: &Index) -> serde_json::Result<Vec<u8>> {
    let json = serde_json::to_vec(index)?;
    let mut out = Vec::with_capacity(PREAMBLE + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(&json);
    Ok(out)
}

/// Bytes the preamble and an index of `json_len` bytes take, rounded up to [`ALIGN`].
pub fn data_start(json_len: usize) -> u64 {
    ((PREAMBLE + json_len) as u64).next_multiple_of(ALIGN)
}

/// The file's index when the file is one of ours, whole, and for `key`; `None` for anything
/// else (not ours, truncated, stale, another kernel path), which is then rebuilt.
pub fn read_index(file: &File, key: &Key) -> Option<Index> {
    let file_len = file.metadata().ok()?.len();
    let mut preamble = [0u8; PREAMBLE];
    file.read_exact_at(&mut preamble, 0).ok()?;
    let (magic, len) = preamble.split_at(8);
    if magic != MAGIC {
        return None;
    }
    let json_len = u64::from_le_bytes(len.try_into().ok()?);
    if json_len > MAX_INDEX || PREAMBLE as u64 + json_len > file_len {
        return None;
    }
    let mut json = vec![0u8; json_len as usize];
    file.read_exact_at(&mut json, PREAMBLE as u64).ok()?;
    let index: Index = serde_json::from_slice(&json).ok()?;
    let first = data_start(json.len());
    let inside = |e: &Entry| {
        e.offset >= first
            && e.offset
                .checked_add(e.len)
                .is_some_and(|end| end <= file_len)
    };
    (index.key == *key && index.chunk == CHUNK && index.entries.iter().all(inside)).then_some(index)
}
