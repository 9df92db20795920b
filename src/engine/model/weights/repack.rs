//! Weights repacked at load into the layout the kernel path wants (`Isa::packed_layout`), in
//! the load's arena (or read back from the repack cache), and where a layer's blocks live
//! (the map, the arena or the cache file, or a copy of our own).

use super::mapped::MappedBytes;
use super::packed_cache::PackedCache;
use super::pages::{Arena, Pages};
use crate::engine::model::kernels::{Format, Layout};
use crate::engine::model::runtime::kernel_path;
use candle_core::Result;

/// Where a native layer's blocks live.
pub(super) enum WeightBytes {
    /// In the model file's memory map (how models are loaded).
    Mapped(MappedBytes),
    /// In memory of our own (layers built from a `QTensor`, as tests do).
    Owned(Vec<u8>),
    /// Repacked: in the load's arena (repacked now, or copied out of the repack cache), or in
    /// the repack cache's file mapped in huge pages. Shared with the repack cache's writer
    /// while it writes.
    Repacked(Pages),
}

impl WeightBytes {
    pub(super) fn as_slice(&self) -> &[u8] {
        match self {
            WeightBytes::Mapped(m) => m,
            WeightBytes::Owned(v) => v,
            WeightBytes::Repacked(pages) => pages,
        }
    }
}

/// Rows repacked between two hand-backs of the source's pages: a large matrix (Gemma 3's
/// 178 MB output head) is then never resident twice over while it is copied.
const REPACK_SLICE_ROWS: usize = 4096;

/// A matrix's name in the model file and the load's repack cache, for [`repacked`].
pub(super) type Cached<'a> = Option<(&'a PackedCache, &'a str)>;

/// `w` (`rows` rows of `format`) in the layout the kernels in use want, when that is not
/// ggml's (`Isa::packed_layout`): read back from the repack cache when it holds it, else
/// repacked into `arena` (and given to the cache to keep). `done(bytes)` is told each range
/// of `w` that has been copied.
pub(super) fn repacked(
    w: &[u8],
    format: Format,
    rows: usize,
    done: impl Fn(std::ops::Range<usize>),
    arena: &Arena,
    cached: Cached,
) -> Option<Result<(WeightBytes, Layout)>> {
    if rows == 0 || !w.len().is_multiple_of(rows) {
        return None;
    }
    let (packed_layout, repack) = kernel_path::isa().packed_layout(format)?;
    let row_bytes = w.len() / rows;
    let blocks = row_bytes / format.spec().block_bytes;
    let group = packed_layout.row_group();
    // `block_bytes` of a repacked layout is per row: a group's blocks take `group` times that.
    let group_bytes = blocks * packed_layout.block_bytes() * group;
    let len = rows.div_ceil(group) * group_bytes;
    if let Some(pages) =
        cached.and_then(|(cache, name)| cache.fetch(name, packed_layout, len, arena))
    {
        return Some(Ok((WeightBytes::Repacked(pages), packed_layout)));
    }
    let packed = arena.take(len).map(|mut region| {
        let out = region.bytes_mut();
        for first in (0..rows).step_by(REPACK_SLICE_ROWS) {
            let end = (first + REPACK_SLICE_ROWS).min(rows);
            let src = first * row_bytes..end * row_bytes;
            let dst = first / group * group_bytes..end.div_ceil(group) * group_bytes;
            repack(&w[src.clone()], end - first, &mut out[dst]);
            done(src);
        }
        region.done()
    });
    Some(
        packed
            .map(|pages| {
                if let Some((cache, name)) = cached {
                    cache.record(name, packed_layout, pages.clone());
                }
                (WeightBytes::Repacked(pages), packed_layout)
            })
            .map_err(|e| candle_core::Error::Msg(format!("cannot allocate repacked weights: {e}"))),
    )
}
