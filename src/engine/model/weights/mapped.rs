//! Tensors of a GGUF file, served from a memory map (the base of [`super`]: what builds a
//! layer from a tensor, `WeightFile::linear` and `WeightFile::rows`, lives with the layer).
//!
//! Quantized matrices and embedding tables are not copied: the kernels read their blocks
//! straight from the mapped file, so the weights cost page cache (shared, reclaimable, and
//! only the pages a forward pass touches) instead of a second private copy. The exception is
//! the formats a kernel path reads faster sixteen rows interleaved (`kernels::packed`; which
//! formats, per path, is `kernels::Isa`'s choice): those are repacked once at load and their
//! file pages handed back. Small tensors (norms, biases) and formats without kernels of ours
//! are copied into candle tensors.

use super::packed_cache::{Outcome, PackedCache};
use super::pages::Arena;
use crate::engine::gguf::{GgufHeader, TensorInfo};
use anyhow::{anyhow, Context, Result};
use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::Device;
use memmap2::Mmap;
use std::borrow::Cow;
use std::fs::File;
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

/// The bytes of one tensor inside the mapped file; cloning shares the map.
#[derive(Clone)]
pub struct MappedBytes {
    map: Arc<Mmap>,
    range: Range<usize>,
}

impl Deref for MappedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

impl MappedBytes {
    /// Drops these pages from the process's memory once their content lives elsewhere (they
    /// stay in the page cache; reading them again maps them back).
    pub fn release(&self) {
        self.release_part(0..self.range.len());
    }

    /// [`Self::release`] for the bytes `part` of this tensor (a repack hands pages back as it
    /// goes, so a large matrix is never resident twice).
    pub fn release_part(&self, part: Range<usize>) {
        let end = part.end.min(self.range.len());
        let part = part.start.min(end)..end;
        // SAFETY: the map is read-only and shared with the file, so dropping its pages loses
        // nothing: the next read, if any, maps the file's bytes back. Pages at the range's
        // edges may hold neighbouring bytes; they are mapped back the same way.
        // A failure only means the pages stay mapped, so it is ignored.
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                self.range.start + part.start,
                part.len(),
            )
        };
    }
}

/// The open file, mapped, the repack cache its matrices may be read back from, and the arena
/// its repacked matrices are put in.
pub struct WeightFile<'h> {
    header: &'h GgufHeader,
    map: Arc<Mmap>,
    packed: Option<PackedCache>,
    arena: Arena,
}

impl<'h> WeightFile<'h> {
    /// The file, its repacked matrices read back from (and kept in) the repack cache in
    /// `cache_dir`, when one is given.
    pub fn open_cached(header: &'h GgufHeader, cache_dir: Option<&Path>) -> Result<Self> {
        let mut file = Self::open(header)?;
        file.packed = cache_dir.and_then(|dir| PackedCache::open(dir, header));
        Ok(file)
    }

    /// The repack cache of this load, if any.
    pub(super) fn packed_cache(&self) -> Option<&PackedCache> {
        self.packed.as_ref()
    }

    /// Where this load's repacked matrices go.
    pub(super) fn arena(&self) -> &Arena {
        &self.arena
    }

    /// Ends the load: the repack cache writes what it did not hold, and says what it did.
    pub fn finish(self) -> Outcome {
        self.packed.map(PackedCache::finish).unwrap_or_default()
    }

    pub fn open(header: &'h GgufHeader) -> Result<Self> {
        let file = File::open(&header.path)
            .with_context(|| format!("{}: cannot open", header.path.display()))?;
        // SAFETY: the map is read-only. If another process truncates or rewrites the file
        // while it is mapped, reads can fault (SIGBUS) or see the new bytes: the same risk
        // every mmap-based model loader (llama.cpp included) accepts. taper's own downloads
        // replace files by rename, which leaves a mapped file untouched.
        let map = unsafe { Mmap::map(&file) }
            .with_context(|| format!("{}: cannot map the file", header.path.display()))?;
        if (map.len() as u64) < header.file_size {
            anyhow::bail!("{}: the file shrank while loading", header.path.display());
        }
        Ok(Self {
            header,
            map: Arc::new(map),
            packed: None,
            arena: Arena::new(expected_repacked_bytes(header.file_size)),
        })
    }

    pub fn has(&self, name: &str) -> bool {
        self.header.tensor(name).is_some()
    }

    pub(super) fn info(&self, name: &str) -> Result<&TensorInfo> {
        self.header
            .tensor(name)
            .ok_or_else(|| anyhow!("tensor {name} is missing"))
    }

    /// The stored bytes of a tensor (the header reader checked they lie inside the file).
    pub(super) fn bytes(&self, info: &TensorInfo) -> Result<MappedBytes> {
        let start = usize::try_from(info.offset)?;
        let end = start
            .checked_add(usize::try_from(info.size_bytes)?)
            .filter(|&end| end <= self.map.len())
            .ok_or_else(|| anyhow!("tensor {} lies past the end of the file", info.name))?;
        Ok(MappedBytes {
            map: self.map.clone(),
            range: start..end,
        })
    }

    /// The tensor copied into candle's quantized storage.
    pub(super) fn qtensor(&self, info: &TensorInfo) -> Result<Arc<QTensor>> {
        let bytes = self.bytes(info)?;
        let storage = qstorage(&bytes, info.dtype)?;
        let tensor =
            QTensor::new(storage, info.shape()).with_context(|| format!("tensor {}", info.name))?;
        Ok(Arc::new(tensor))
    }

    /// A 1-D f32 vector (norm weights, biases, rope factors).
    /// A 1-D tensor of `len` values (norm weights, biases, frequency factors), dequantized.
    pub fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        self.expect_dims(name, &[len])?;
        Ok(self
            .qtensor(self.info(name)?)?
            .dequantize(&Device::Cpu)?
            .to_vec1::<f32>()?)
    }

    pub fn optional_vector(&self, name: &str, len: usize) -> Result<Option<Vec<f32>>> {
        if self.has(name) {
            self.vector(name, len).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn expect_dims(&self, name: &str, dims: &[usize]) -> Result<()> {
        let info = self.info(name)?;
        if info.dims != dims {
            anyhow::bail!("tensor {name} has shape {:?}, expected {dims:?}", info.dims);
        }
        Ok(())
    }

    pub fn dtype(&self, name: &str) -> Option<GgmlDType> {
        self.header.tensor(name).map(|t| t.dtype)
    }
}

/// candle's quantized storage for `bytes` (a copy). candle reinterprets the bytes as blocks,
/// which requires their alignment: misaligned bytes go through an aligned buffer first.
pub fn qstorage(bytes: &[u8], dtype: GgmlDType) -> Result<QStorage> {
    if (bytes.as_ptr() as usize).is_multiple_of(8) {
        return Ok(QStorage::from_data(
            Cow::Borrowed(bytes),
            &Device::Cpu,
            dtype,
        )?);
    }
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    let view = bytemuck_bytes_mut(&mut words);
    view[..bytes.len()].copy_from_slice(bytes);
    Ok(QStorage::from_data(
        Cow::Borrowed(&view[..bytes.len()]),
        &Device::Cpu,
        dtype,
    )?)
}

fn bytemuck_bytes_mut(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: u64 has no padding and any byte pattern is a valid u8; the length covers
    // exactly the words' memory.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) }
}

/// Address space for a model's repacked matrices: they are about the size of the file (2%
/// more for the Qwen3-4B shape: sixteen-row groups, wider scales); an eighth more and 16 MiB
/// leave room for any layout, and a matrix that still does not fit gets a map of its own.
fn expected_repacked_bytes(file_size: u64) -> usize {
    let file = usize::try_from(file_size).unwrap_or(usize::MAX);
    file.saturating_add(file / 8).saturating_add(16 << 20)
}
