//! What every kernel reads from ggml's blocks: the block sizes, the f16 scales, Q4_K's packed
//! 6-bit scales and mins.

/// Elements of a 32-element block.
pub const QK: usize = 32;
/// Elements of a k-quant super-block.
pub const QK_K: usize = 256;

// Bytes of one block as ggml stores it, each format's named once here (the format table,
// `FORMATS`, and every kernel that walks blocks read them from here).
/// Q4_0: an f16 scale and 32 nibbles.
pub const Q4_0_BYTES: usize = 18;
/// Q4_1: f16 scale and min, 32 nibbles.
pub const Q4_1_BYTES: usize = 20;
/// Q5_0: an f16 scale, 32 high bits, 32 nibbles.
pub const Q5_0_BYTES: usize = 22;
/// Q8_0: an f16 scale and 32 bytes.
pub const Q8_0_BYTES: usize = 34;
/// Q4_K: f16 scale and min, 12 bytes of 6-bit sub-block scales, 256 nibbles.
pub const Q4K_BYTES: usize = 144;
/// Q5_K: as Q4_K plus 256 high bits.
pub const Q5K_BYTES: usize = 176;
/// Q6_K: 256 low nibbles, 256 two-bit highs, 16 scales, an f16 scale.
pub const Q6K_BYTES: usize = 210;

/// IEEE half to single precision, exactly (ggml stores block scales as f16).
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    if exp == 0 {
        // Zero or subnormal: mant · 2⁻²⁴, exact in f32.
        let v = mant as f32 * (1.0 / 16_777_216.0);
        return f32::from_bits(v.to_bits() | sign);
    }
    let bits = if exp == 0x1f {
        sign | 0x7f80_0000 | (mant << 13)
    } else {
        sign | ((exp + 112) << 23) | (mant << 13)
    };
    f32::from_bits(bits)
}

#[inline]
pub(crate) fn read_f16(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Q4_K's 6-bit scale and min of sub-block `j` (ggml's `get_scale_min_k4`).
#[inline(always)]
pub(crate) fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}
