//! How the KV cache lays out what it stores, and the views it hands attention: the cache owns
//! its layout, and attention reads it through these (attention imports them from here, never
//! the other way round).

/// Positions per tile of keys.
pub const TILE: usize = 256;
/// Distance between a tile's dimensions in its f32 copy: not a multiple of 4 KB (a tile's
/// 256 floats are 1 KB), so that the runs of a block of keys fall in different sets of the
/// first-level cache instead of evicting each other.
pub const KEY_STRIDE: usize = TILE + 16;
/// Values a q8_0 block holds.
pub const Q8_BLOCK: usize = 32;

/// Numbers the cache hands attention (a tile's keys, a run of values): f32, or the cache's f16
/// bits, converted exactly as they are loaded. Either way the arithmetic sees the same f32 values,
/// so a result does not depend on which one it read.
#[derive(Debug, Clone, Copy)]
pub enum Numbers<'a> {
    F32(&'a [f32]),
    F16(&'a [u16]),
}

/// A tile's keys, transposed: for each dimension a run of the tile's positions, `stride`
/// numbers apart.
#[derive(Debug, Clone, Copy)]
pub struct KeyRuns<'a> {
    pub numbers: Numbers<'a>,
    pub stride: usize,
}
