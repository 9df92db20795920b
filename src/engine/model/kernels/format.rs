//! The GGUF weight formats with kernels of our own, one table row each: how a file stores a
//! block, which activations it multiplies, and the layout it is repacked into where an
//! instruction set has kernels for one.

use super::blocks::{
    Q4K_BYTES, Q4_0_BYTES, Q4_1_BYTES, Q5K_BYTES, Q5_0_BYTES, Q6K_BYTES, Q8_0_BYTES, QK, QK_K,
};
use super::layout::{Layout, Q8KLayout, Q8Layout};
use super::packed;
use candle_core::quantized::GgmlDType;

/// A weight format as a GGUF file stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Q4_0,
    Q4_1,
    Q5_0,
    Q8_0,
    Q4K,
    Q5K,
    Q6K,
}

/// One row of [`FORMATS`].
pub struct FormatSpec {
    pub format: Format,
    pub dtype: GgmlDType,
    /// Elements per block.
    pub block_elems: usize,
    /// Bytes per block, as ggml stores it.
    pub block_bytes: usize,
    /// The blocks as the file has them, where kernels of ours read them (`None`: only the
    /// repacked layout has kernels; where it does not run, candle computes the matrix).
    pub ggml: Option<Layout>,
    /// The layouts the matrix can be repacked into at load, each with the function that
    /// repacks `rows` rows into it; an instruction set takes the one it runs best
    /// ([`super::Isa::packed_layout`]).
    pub packed: &'static [(Layout, packed::Repack)],
}

/// Every format with kernels of ours. Adding one: a row here, its layouts in
/// [`super::layout`], their references in [`super::generic`] or [`super::packed`], and SIMD
/// kernels where written.
pub const FORMATS: [FormatSpec; 7] = [
    FormatSpec {
        format: Format::Q4_0,
        dtype: GgmlDType::Q4_0,
        block_elems: QK,
        block_bytes: Q4_0_BYTES,
        ggml: Some(Layout::Q8(Q8Layout::Q4_0)),
        packed: &[],
    },
    FormatSpec {
        format: Format::Q4_1,
        dtype: GgmlDType::Q4_1,
        block_elems: QK,
        block_bytes: Q4_1_BYTES,
        ggml: Some(Layout::Q8(Q8Layout::Q4_1)),
        packed: &[(Layout::Q8(Q8Layout::Q4_1X16), packed::q4_1_x16::repack_into)],
    },
    FormatSpec {
        format: Format::Q5_0,
        dtype: GgmlDType::Q5_0,
        block_elems: QK,
        block_bytes: Q5_0_BYTES,
        ggml: Some(Layout::Q8(Q8Layout::Q5_0)),
        packed: &[(Layout::Q8(Q8Layout::Q5_0X16), packed::q5_0_x16::repack_into)],
    },
    FormatSpec {
        format: Format::Q8_0,
        dtype: GgmlDType::Q8_0,
        block_elems: QK,
        block_bytes: Q8_0_BYTES,
        ggml: Some(Layout::Q8(Q8Layout::Q8_0)),
        packed: &[(Layout::Q8(Q8Layout::Q8_0X16), packed::q8_0_x16::repack_into)],
    },
    FormatSpec {
        format: Format::Q4K,
        dtype: GgmlDType::Q4K,
        block_elems: QK_K,
        block_bytes: Q4K_BYTES,
        ggml: Some(Layout::Q8K(Q8KLayout::Q4K)),
        packed: &[
            (Layout::Q8K(Q8KLayout::Q4KX16), packed::q4k_x16::repack_into),
            (
                Layout::Q8K(Q8KLayout::Q4KX16Compact),
                packed::q4k_x16::repack_compact_into,
            ),
        ],
    },
    FormatSpec {
        format: Format::Q5K,
        dtype: GgmlDType::Q5K,
        block_elems: QK_K,
        block_bytes: Q5K_BYTES,
        ggml: None,
        packed: &[
            (Layout::Q8K(Q8KLayout::Q5KX16), packed::q5k_x16::repack_into),
            (
                Layout::Q8K(Q8KLayout::Q5KX16Compact),
                packed::q5k_x16::repack_compact_into,
            ),
        ],
    },
    FormatSpec {
        format: Format::Q6K,
        dtype: GgmlDType::Q6K,
        block_elems: QK_K,
        block_bytes: Q6K_BYTES,
        ggml: Some(Layout::Q8K(Q8KLayout::Q6K)),
        packed: &[(Layout::Q8K(Q8KLayout::Q6KX16), packed::q6k_x16::repack_into)],
    },
];

impl Format {
    /// The format of `dtype`, if we have kernels for it.
    pub fn from_dtype(dtype: GgmlDType) -> Option<Self> {
        FORMATS.iter().find(|s| s.dtype == dtype).map(|s| s.format)
    }

    pub fn spec(self) -> &'static FormatSpec {
        FORMATS
            .iter()
            .find(|s| s.format == self)
            .expect("every format has a row in FORMATS")
    }
}
