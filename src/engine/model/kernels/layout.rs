//! What a kernel reads: a weight layout, either ggml's blocks as the file stores them or one
//! repacked at load ([`super::packed`]), typed by the activations it multiplies, so a kernel
//! can never be handed the wrong kind of activation row.

use super::format::Format;
use super::packed::{self, GROUP};

/// Layouts multiplied by 32-element 8-bit activations ([`super::Q8Block`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Q8Layout {
    Q4_0,
    Q4_1,
    Q5_0,
    Q8_0,
    /// Q4_1 repacked sixteen rows at a time ([`packed::q4_1_x16`]).
    Q4_1X16,
    /// Q5_0 repacked sixteen rows at a time ([`packed::q5_0_x16`]).
    Q5_0X16,
    /// Q8_0 repacked sixteen rows at a time ([`packed::q8_0_x16`]).
    Q8_0X16,
}

/// Layouts multiplied by k-quant activations ([`super::Q8KBlock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Q8KLayout {
    Q4K,
    Q6K,
    /// Q4_K repacked sixteen rows at a time ([`packed::q4k_x16`]).
    Q4KX16,
    /// Q4_K×16 with its scales and mins compact, as large as ggml's blocks
    /// ([`packed::q4k_x16`]).
    Q4KX16Compact,
    /// Q5_K repacked sixteen rows at a time ([`packed::q5k_x16`]); Q5_K has no kernel in
    /// ggml's layout.
    Q5KX16,
    /// Q5_K×16 with its scales and mins compact, as large as ggml's blocks.
    Q5KX16Compact,
    /// Q6_K repacked sixteen rows at a time ([`packed::q6k_x16`]).
    Q6KX16,
}

/// A weight matrix's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Q8(Q8Layout),
    Q8K(Q8KLayout),
}

impl Layout {
    /// The file format whose values the layout holds.
    pub fn format(self) -> Format {
        match self {
            Layout::Q8(Q8Layout::Q4_0) => Format::Q4_0,
            Layout::Q8(Q8Layout::Q4_1 | Q8Layout::Q4_1X16) => Format::Q4_1,
            Layout::Q8(Q8Layout::Q5_0 | Q8Layout::Q5_0X16) => Format::Q5_0,
            Layout::Q8(Q8Layout::Q8_0 | Q8Layout::Q8_0X16) => Format::Q8_0,
            Layout::Q8K(Q8KLayout::Q4K | Q8KLayout::Q4KX16 | Q8KLayout::Q4KX16Compact) => {
                Format::Q4K
            }
            Layout::Q8K(Q8KLayout::Q5KX16 | Q8KLayout::Q5KX16Compact) => Format::Q5K,
            Layout::Q8K(Q8KLayout::Q6K | Q8KLayout::Q6KX16) => Format::Q6K,
        }
    }

    /// Whether the rows are stored in groups (a repacked layout).
    pub fn is_packed(self) -> bool {
        self.row_group() > 1
    }

    /// Elements per block.
    pub fn block_elems(self) -> usize {
        self.format().spec().block_elems
    }

    /// Bytes one row's block takes (for a repacked layout, a group's block over its rows).
    pub fn block_bytes(self) -> usize {
        match self {
            Layout::Q8K(Q8KLayout::Q4KX16) => packed::q4k_x16::ROW_BLOCK_BYTES,
            Layout::Q8K(Q8KLayout::Q5KX16) => packed::q5k_x16::ROW_BLOCK_BYTES,
            Layout::Q8K(Q8KLayout::Q4KX16Compact) => packed::q4k_x16::COMPACT_ROW_BLOCK_BYTES,
            Layout::Q8K(Q8KLayout::Q5KX16Compact) => packed::q5k_x16::COMPACT_ROW_BLOCK_BYTES,
            _ => self.format().spec().block_bytes,
        }
    }

    /// Rows stored together: a matmul splits a matrix's rows only at multiples of this.
    pub fn row_group(self) -> usize {
        match self {
            Layout::Q8(Q8Layout::Q4_1X16 | Q8Layout::Q5_0X16 | Q8Layout::Q8_0X16)
            | Layout::Q8K(
                Q8KLayout::Q4KX16
                | Q8KLayout::Q4KX16Compact
                | Q8KLayout::Q5KX16
                | Q8KLayout::Q5KX16Compact
                | Q8KLayout::Q6KX16,
            ) => GROUP,
            _ => 1,
        }
    }

    /// Whether a k-quant layout keeps its 6-bit scales and mins as compact as ggml's (for the
    /// kernels to unpack), rather than a byte each.
    pub fn has_compact_scales(self) -> bool {
        matches!(
            self,
            Layout::Q8K(Q8KLayout::Q4KX16Compact | Q8KLayout::Q5KX16Compact)
        )
    }

    /// Whether the activations are quantized to [`super::Q8KBlock`]s (else
    /// [`super::Q8Block`]s).
    pub fn uses_q8k(self) -> bool {
        matches!(self, Layout::Q8K(_))
    }
}

impl From<Q8Layout> for Layout {
    fn from(l: Q8Layout) -> Self {
        Layout::Q8(l)
    }
}

impl From<Q8KLayout> for Layout {
    fn from(l: Q8KLayout) -> Self {
        Layout::Q8K(l)
    }
}
