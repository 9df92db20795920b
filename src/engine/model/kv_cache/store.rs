//! How one layer's keys or values are stored, in f32, f16 or q8_0 (32 signed bytes sharing one
//! f16 scale, ggml's block), and how attention reads them back as f32.
//!
//! Values are rows: `(kv_head, position)` → `head_dim` numbers, q8_0 blocks along the row.
//! Keys are stored by tiles of [`TILE`] positions, transposed: for each dimension, the tile's
//! positions side by side. Attention then scores sixteen positions at once with plain vector
//! multiply-adds (a broadcast query value times a run of keys), with no horizontal sum per
//! key; q8_0 keys keep one scale per 32 dimensions of each position.

use super::convert;
use super::layout::{KeyRuns, Numbers, KEY_STRIDE, Q8_BLOCK, TILE};
use super::zeroed::Zeroed;
use anyhow::{bail, Result};

pub use crate::protocol::CacheType;

impl CacheType {
    /// Bytes a row of `head_dim` values takes.
    pub fn row_bytes(self, head_dim: usize) -> usize {
        match self {
            CacheType::F32 => 4 * head_dim,
            CacheType::F16 => 2 * head_dim,
            CacheType::Q8_0 => head_dim + 2 * head_dim.div_ceil(Q8_BLOCK),
        }
    }

    /// Whether rows of `head_dim` values can be stored this way.
    pub fn check_head_dim(self, head_dim: usize) -> Result<()> {
        if self == CacheType::Q8_0 && !head_dim.is_multiple_of(Q8_BLOCK) {
            bail!(
                "a q8_0 KV cache needs heads of a multiple of {Q8_BLOCK} values; this model's \
                 are {head_dim}: use --cache-type f16"
            );
        }
        Ok(())
    }
}

/// The numbers of a store, in its format. Buffers start zeroed (the OS maps them lazily, see
/// [`Zeroed`]), so memory grows with the conversation, not with the context size.
enum Data {
    F32(Zeroed<f32>),
    F16(Zeroed<u16>),
    /// `scales` has one f16 per 32 values: per row (values) or per 32 dimensions of a
    /// position (keys).
    Q8_0 {
        scales: Zeroed<u16>,
        quants: Zeroed<i8>,
    },
}

impl Data {
    fn new(kind: CacheType, values: usize) -> Result<Self> {
        Ok(match kind {
            CacheType::F32 => Data::F32(Zeroed::new(values)?),
            CacheType::F16 => Data::F16(Zeroed::new(values)?),
            CacheType::Q8_0 => Data::Q8_0 {
                scales: Zeroed::new(values / Q8_BLOCK)?,
                quants: Zeroed::new(values)?,
            },
        })
    }
}

/// One layer's values: rows of `head_dim` numbers, `(kv_head, position)` row-major.
pub struct ValueStore {
    data: Data,
    head_dim: usize,
    capacity: usize,
}

impl ValueStore {
    pub fn new(kind: CacheType, kv_heads: usize, capacity: usize, head_dim: usize) -> Result<Self> {
        Ok(Self {
            data: Data::new(kind, kv_heads * capacity * head_dim)?,
            head_dim,
            capacity,
        })
    }

    pub fn write(&mut self, head: usize, pos: usize, values: &[f32]) {
        let d = self.head_dim;
        let at = (head * self.capacity + pos) * d;
        match &mut self.data {
            Data::F32(data) => data[at..at + d].copy_from_slice(values),
            Data::F16(data) => convert::f32_to_f16(values, &mut data[at..at + d]),
            Data::Q8_0 { scales, quants } => {
                for (b, x) in values.chunks_exact(Q8_BLOCK).enumerate() {
                    let q = &mut quants[at + b * Q8_BLOCK..][..Q8_BLOCK];
                    scales[at / Q8_BLOCK + b] = convert::quantize_q8_0(x, q);
                }
            }
        }
    }

    /// Positions `first..last` of `head`, rows of `head_dim`: borrowed when stored as f32,
    /// or as f16 when `f16_in_place` (for a few rows of queries, which would each read a
    /// converted copy about once); else converted to f32 into `scratch`.
    pub fn rows<'a>(
        &'a self,
        head: usize,
        first: usize,
        last: usize,
        f16_in_place: bool,
        scratch: &'a mut Vec<f32>,
    ) -> Numbers<'a> {
        let d = self.head_dim;
        let (from, to) = (
            (head * self.capacity + first) * d,
            (head * self.capacity + last) * d,
        );
        Numbers::F32(match &self.data {
            Data::F32(data) => &data[from..to],
            Data::F16(data) if f16_in_place => return Numbers::F16(&data[from..to]),
            Data::F16(data) => {
                scratch.resize(to - from, 0.0);
                convert::f16_to_f32(&data[from..to], scratch);
                scratch
            }
            Data::Q8_0 { scales, quants } => {
                scratch.resize(to - from, 0.0);
                let blocks = &scales[from / Q8_BLOCK..to / Q8_BLOCK];
                convert::q8_0_to_f32(blocks, &quants[from..to], scratch);
                scratch
            }
        })
    }
}

/// One layer's keys, by tiles of [`TILE`] positions, each transposed: `(kv_head, tile,
/// dimension, position in the tile)`.
pub struct KeyStore {
    data: Data,
    head_dim: usize,
    tiles: usize,
}

impl KeyStore {
    pub fn new(kind: CacheType, kv_heads: usize, capacity: usize, head_dim: usize) -> Result<Self> {
        let tiles = capacity.div_ceil(TILE);
        Ok(Self {
            data: Data::new(kind, kv_heads * tiles * head_dim * TILE)?,
            head_dim,
            tiles,
        })
    }

    /// Where tile `tile` of `head` starts.
    fn tile_start(&self, head: usize, tile: usize) -> usize {
        (head * self.tiles + tile) * self.head_dim * TILE
    }

    pub fn write(&mut self, head: usize, pos: usize, values: &[f32]) {
        let (start, col) = (self.tile_start(head, pos / TILE), pos % TILE);
        match &mut self.data {
            Data::F32(data) => {
                for (i, &x) in values.iter().enumerate() {
                    data[start + i * TILE + col] = x;
                }
            }
            Data::F16(data) => {
                for (i, &x) in values.iter().enumerate() {
                    data[start + i * TILE + col] = half::f16::from_f32(x).to_bits();
                }
            }
            Data::Q8_0 { scales, quants } => {
                let mut q = [0i8; Q8_BLOCK];
                for (b, x) in values.chunks_exact(Q8_BLOCK).enumerate() {
                    let scale = convert::quantize_q8_0(x, &mut q);
                    scales[start / Q8_BLOCK + b * TILE + col] = scale;
                    for (i, &v) in q.iter().enumerate() {
                        quants[start + (b * Q8_BLOCK + i) * TILE + col] = v;
                    }
                }
            }
        }
    }

    /// Tile `tile` of `head`: `head_dim` runs of [`TILE`] positions (only the written ones
    /// are meaningful). Read in place (runs [`TILE`] apart) when `in_place` and stored as f32
    /// or f16; else converted to f32 in `scratch`, runs [`KEY_STRIDE`] apart, which keeps a
    /// block of keys in the first-level cache while many rows of queries take it.
    pub fn tile<'a>(
        &'a self,
        head: usize,
        tile: usize,
        in_place: bool,
        scratch: &'a mut Vec<f32>,
    ) -> KeyRuns<'a> {
        let (d, start) = (self.head_dim, self.tile_start(head, tile));
        let len = d * TILE;
        let numbers = match &self.data {
            Data::F32(data) if in_place => Some(Numbers::F32(&data[start..start + len])),
            Data::F16(data) if in_place => Some(Numbers::F16(&data[start..start + len])),
            _ => None,
        };
        if let Some(numbers) = numbers {
            return KeyRuns {
                numbers,
                stride: TILE,
            };
        }
        scratch.resize(d * KEY_STRIDE, 0.0);
        let runs = scratch
            .chunks_exact_mut(KEY_STRIDE)
            .map(|run| &mut run[..TILE]);
        match &self.data {
            Data::F32(data) => {
                for (run, src) in runs.zip(data[start..start + len].chunks_exact(TILE)) {
                    run.copy_from_slice(src);
                }
            }
            Data::F16(data) => {
                for (run, src) in runs.zip(data[start..start + len].chunks_exact(TILE)) {
                    convert::f16_to_f32(src, run);
                }
            }
            Data::Q8_0 { scales, quants } => {
                let scales = &scales[start / Q8_BLOCK..(start + len) / Q8_BLOCK];
                convert::q8_0_columns_to_f32(scales, &quants[start..start + len], scratch);
            }
        }
        KeyRuns {
            numbers: Numbers::F32(scratch),
            stride: KEY_STRIDE,
        }
    }
}
