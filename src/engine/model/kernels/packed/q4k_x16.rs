//! Q4_K weights repacked sixteen rows at a time ("Q4_K×16"), for AVX-512 VNNI and AVX2.
//!
//! In ggml's layout each row's super-block is self-contained, so a kernel finishes every
//! (weight row, activation row) pair with a horizontal reduction and its own float tail; that
//! tail, not the multiply-adds, was most of a Q4_K prefill. Here lane `i` of every 512-bit
//! vector belongs to row `i` of a group of sixteen: one `vpdpbusd` against four activation
//! bytes broadcast to all lanes advances sixteen rows at once, and the scales, mins and
//! the float arithmetic are applied to sixteen rows per instruction. Repacking happens once,
//! when a model is loaded.
//!
//! One group's super-block ([`BLOCK_BYTES`] bytes):
//! - `d` and `dmin` of the sixteen rows, f16 (32 bytes each);
//! - the eight sub-blocks' 6-bit scales and mins ([`SCALES`]), in one of two forms:
//!   - a byte each: the scales, then the mins, sixteen rows a sub-block (sub-block `s` at
//!     `16 s`), 148 bytes a row and super-block;
//!   - compact (`COMPACT`), ggml's 12 bytes a row, so the layout is exactly as large as
//!     ggml's: first their low four bits, 16 bytes per pair of sub-blocks `2p`, `2p + 1` (the
//!     scales' pairs at `16 p`, the mins' at `64 + 16 p`), byte `i` holding row `i`'s value of
//!     sub-block `2p` in its low nibble and of `2p + 1` in its high one; then their top two
//!     bits, 16 bytes per pair at `128 + 16 p`, byte `i` holding row `i`'s scale `2p`, scale
//!     `2p + 1`, min `2p`, min `2p + 1` in bits 0–1, 2–3, 4–5, 6–7. A decode step reads every
//!     weight once at the memory's speed, so the 2.8% fewer bytes are a faster token wherever
//!     the unpacking costs a kernel less than they save
//!     ([`crate::engine::model::kernels::Isa::prefers_compact_scales`]);
//! - the quants ([`qs`]): for sub-block `s` and `h` in 0..4, 64 bytes at `256 s + 64 h` whose bytes
//!   `4 i .. 4 i + 4` hold row `i`'s quants `32 s + 4 h ..` in their low nibbles and
//!   `32 s + 16 + 4 h ..` in their high ones.
//!
//! A row's result is `Σ_b d_a (d·Σ_s sc_s·mult_s·Σ q·y − dmin·Σ_s m_s·mult_s·Σ y)` (`mult_s`
//! the activations' step multiplier, already in their sums): the first sum in integers, as a
//! whole super-block (`sc_s·mult_s` fits the 16-bit words of AVX2's `vpmaddwd`, so no float
//! step per sub-block), the second with fused multiply-adds in sub-block order; [`dot`] is the
//! plain reference the SIMD kernels match bit for bit.
//! The rows past the end of a matrix are zeros, and their lanes are never read back.

use crate::engine::model::kernels::blocks::Q4K_BYTES;
use crate::engine::model::kernels::packed::{self, GROUP};
use crate::engine::model::kernels::{read_f16, scale_min_k4, Q8KBlock, QK_K};
/// Bytes of one group's super-block, the scales a byte each.
pub const BLOCK_BYTES: usize = block_bytes(false);
/// Bytes per row and super-block (what a matmul slices rows by; a group is 16 of them).
pub const ROW_BLOCK_BYTES: usize = BLOCK_BYTES / GROUP;
/// [`BLOCK_BYTES`] of the compact form.
pub const COMPACT_BLOCK_BYTES: usize = block_bytes(true);
/// [`ROW_BLOCK_BYTES`] of the compact form: ggml's 144.
pub const COMPACT_ROW_BLOCK_BYTES: usize = COMPACT_BLOCK_BYTES / GROUP;

pub(crate) const D: usize = 0;
pub(crate) const DMIN: usize = 32;
pub(crate) const SCALES: usize = 64;
/// Where the mins start when the scales take a byte each.
pub(crate) const MINS: usize = 192;

/// Where a group's quants start.
pub(crate) const fn qs(compact: bool) -> usize {
    SCALES + if compact { 192 } else { 256 }
}

/// Bytes of one group's super-block.
pub(crate) const fn block_bytes(compact: bool) -> usize {
    qs(compact) + 8 * 256
}

/// Repacks `rows` rows of ggml Q4_K blocks into `out`: whole groups, zeros where rows are
/// missing (padding rows are not written). Groups are repacked in parallel.
pub fn repack_into(w: &[u8], rows: usize, out: &mut [u8]) {
    packed::repack(w, rows, out, repack_block::<false, BLOCK_BYTES>);
}

/// [`repack_into`] the compact form.
pub fn repack_compact_into(w: &[u8], rows: usize, out: &mut [u8]) {
    packed::repack(w, rows, out, repack_block::<true, COMPACT_BLOCK_BYTES>);
}

/// Row `i`'s ggml block into its lanes of a group's block.
#[inline(always)]
fn repack_block<const COMPACT: bool, const B: usize>(
    src: &[u8; Q4K_BYTES],
    i: usize,
    dst: &mut [u8; B],
) {
    put_row::<COMPACT>(
        src[0..16].try_into().expect("16 bytes"),
        &src[16..144],
        i,
        dst,
    );
}

/// Row `i`'s `d`, `dmin` and packed scales (`head`, ggml's first 16 bytes) and its 128 bytes
/// of `nibbles` (ggml's order) into its lanes of a group's block `dst`, which starts with
/// this layout's fields (Q5_K×16's does too).
#[inline(always)]
pub(crate) fn put_row<const COMPACT: bool>(
    head: &[u8; 16],
    nibbles: &[u8],
    i: usize,
    dst: &mut [u8],
) {
    dst[D + 2 * i..D + 2 * i + 2].copy_from_slice(&head[0..2]);
    dst[DMIN + 2 * i..DMIN + 2 * i + 2].copy_from_slice(&head[2..4]);
    if COMPACT {
        for p in 0..4 {
            let (sc0, m0) = scale_min_k4(2 * p, &head[4..16]);
            let (sc1, m1) = scale_min_k4(2 * p + 1, &head[4..16]);
            dst[SCALES + 16 * p + i] = (sc0 & 0xF) | (sc1 & 0xF) << 4;
            dst[SCALES + 64 + 16 * p + i] = (m0 & 0xF) | (m1 & 0xF) << 4;
            dst[SCALES + 128 + 16 * p + i] =
                sc0 >> 4 | (sc1 >> 4) << 2 | (m0 >> 4) << 4 | (m1 >> 4) << 6;
        }
    } else {
        for s in 0..8 {
            let (sc, m) = scale_min_k4(s, &head[4..16]);
            dst[SCALES + 16 * s + i] = sc;
            dst[MINS + 16 * s + i] = m;
        }
    }
    // ggml: bytes 32j.. hold quants 64j.. in their low nibbles and 64j + 32.. in the high
    // ones, so sub-block s is in the low (s even) or high (s odd) nibbles of bytes 32(s/2)..;
    // four quants at a time, as u32.
    let word = |at: usize| {
        u32::from_le_bytes([
            nibbles[at],
            nibbles[at + 1],
            nibbles[at + 2],
            nibbles[at + 3],
        ])
    };
    const LOW: u32 = 0x0F0F_0F0F;
    for s in 0..8 {
        for h in 0..4 {
            let first = word(32 * (s / 2) + 4 * h);
            let second = word(32 * (s / 2) + 16 + 4 * h);
            let packed = if s % 2 == 0 {
                (first & LOW) | (second & LOW) << 4
            } else {
                (first >> 4 & LOW) | (second & !LOW)
            };
            let at = qs(COMPACT) + 256 * s + 64 * h + 4 * i;
            dst[at..at + 4].copy_from_slice(&packed.to_le_bytes());
        }
    }
}

/// Where position `l` of a super-block sits in the sixteen-row k-quant layouts: its sub-block
/// `s`, its group `g` (0..8: the low nibbles of runs 0..4, then the high ones) and its byte
/// `j` within the row's four bytes of the group.
pub(crate) fn group_and_byte(l: usize) -> (usize, usize, usize) {
    let (s, within) = (l / 32, l % 32);
    let g = if within < 16 {
        within / 4
    } else {
        4 + (within - 16) / 4
    };
    (s, g, within % 4)
}

/// The scale and the min of sub-block `s` of row `i` of a group's block.
pub(crate) fn scale_and_min<const COMPACT: bool>(block: &[u8], s: usize, i: usize) -> (u8, u8) {
    if !COMPACT {
        return (block[SCALES + 16 * s + i], block[MINS + 16 * s + i]);
    }
    let top = block[SCALES + 128 + 16 * (s / 2) + i] >> (2 * (s % 2));
    let value =
        |at: usize, top: u8| (block[at + 16 * (s / 2) + i] >> (4 * (s % 2)) & 0xF) | (top & 3) << 4;
    (value(SCALES, top), value(SCALES + 64, top >> 4))
}

/// The quant of row `i` at position `l` of a group's block.
pub(crate) fn quant_at<const COMPACT: bool>(block: &[u8], i: usize, l: usize) -> u8 {
    let (s, g, j) = group_and_byte(l);
    let byte = block[qs(COMPACT) + 256 * s + 64 * (g % 4) + 4 * i + j];
    if g < 4 {
        byte & 0xF
    } else {
        byte >> 4
    }
}

/// The plain reference: `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows of `w` (whole
/// groups of [`BLOCK_BYTES`]-byte blocks), in the order the SIMD kernel computes it.
pub fn dot<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [[f32; R]]) {
    dot_with::<R, BLOCK_BYTES, false>(w, a, out, quant_at::<false>)
}

/// [`dot`] for the compact form.
pub fn dot_compact<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [[f32; R]]) {
    dot_with::<R, COMPACT_BLOCK_BYTES, true>(w, a, out, quant_at::<true>)
}

/// [`dot`] for a layout that starts with this one's fields (its scales compact or not), in
/// `B`-byte group blocks, whose quant of row `i` at position `l` is `quant(block, i, l)`
/// (Q5_K×16 adds a fifth bit).
pub(crate) fn dot_with<const R: usize, const B: usize, const COMPACT: bool>(
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
    quant: fn(&[u8], usize, usize) -> u8,
) {
    let nb = packed::check(w, a, out.len(), B);
    if nb == 0 {
        out.iter_mut().for_each(|o| *o = [0.0; R]);
        return;
    }
    for (g, group) in w.chunks_exact(nb * B).enumerate() {
        for (i, o) in out.iter_mut().skip(g * GROUP).take(GROUP).enumerate() {
            let mut acc = [0f32; R];
            for (b, block) in group.chunks_exact(B).enumerate() {
                let d = read_f16(block, D + 2 * i);
                let dmin = read_f16(block, DMIN + 2 * i);
                for r in 0..R {
                    let ab = &a[r][b];
                    // The weights' integer scale times the activations' step multiplier (at
                    // most 63 · 16) weighs each sub-block's integer sum, and the super-block
                    // is summed in integers: |Σ| ≤ 8 · 1008 · 32 · 31 · 127 < 2³¹ even for
                    // Q5_K's five-bit quants. The mins' term is a float sum in sub-block order.
                    let mut isum = 0i32;
                    let mut msum = 0f32;
                    for s in 0..8 {
                        let dot: i32 = (0..32)
                            .map(|l| {
                                let q = quant(block, i, 32 * s + l) as i32;
                                q * ab.qs[32 * s + l] as i32
                            })
                            .sum();
                        let (scale, min) = scale_and_min::<COMPACT>(block, s, i);
                        isum += i32::from(scale) * i32::from(ab.mult[s]) * dot;
                        let min = f32::from(min);
                        msum = min.mul_add(ab.sums_f32[s], msum);
                    }
                    let sum = (-dmin).mul_add(msum, isum as f32 * d);
                    acc[r] = sum.mul_add(ab.d, acc[r]);
                }
            }
            *o = acc;
        }
    }
}

// The compact form is as large as ggml's block: 144 bytes a row and super-block.
const _: () = assert!(BLOCK_BYTES.is_multiple_of(GROUP) && QK_K == 256);
const _: () = assert!(COMPACT_BLOCK_BYTES == GROUP * Q4K_BYTES);
