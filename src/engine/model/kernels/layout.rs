//! What a kernel reads: a weight layout, either ggml's blocks as the file stores them or one
//! repacked at load ([`super::packed`]), typed by the activations it multiplies, so a kernel
//! can never be handed the wrong kind of activation row. Each layout's properties (format,
//! block bytes, row group, compact scales, AVX2 tile width) are one arm of [`Layout::spec`].

use super::blocks::{Q4K_BYTES, Q4_0_BYTES, Q4_1_BYTES, Q5_0_BYTES, Q6K_BYTES, Q8_0_BYTES};
use super::format::Format;
use super::packed::{q4k_x16, q5k_x16, GROUP};

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

/// What a layout is: its row of the table [`Layout::spec`] (the activations it multiplies are
/// its [`Layout`] variant, so that a kernel is typed by them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutSpec {
    /// The file format whose values the layout holds.
    pub format: Format,
    /// Bytes one row's block takes (for a repacked layout, a group's block over its rows).
    pub block_bytes: usize,
    /// Rows stored together: a matmul splits a matrix's rows only at multiples of this.
    pub row_group: usize,
    /// A k-quant layout that keeps its 6-bit scales and mins as compact as ggml's (for the
    /// kernels to unpack), rather than a byte each.
    pub compact_scales: bool,
    /// AVX2's and AVX-VNNI's kernels take eight activation rows at a time rather than four
    /// (measured per layout: see [`super::Isa::wide_tiles`]).
    pub eight_rows_on_avx2: bool,
}

impl LayoutSpec {
    /// ggml's blocks as the file stores them.
    const fn ggml(format: Format, block_bytes: usize) -> Self {
        Self {
            format,
            block_bytes,
            row_group: 1,
            compact_scales: false,
            eight_rows_on_avx2: false,
        }
    }

    /// Repacked [`GROUP`] rows at a time.
    const fn x16(format: Format, block_bytes: usize, eight_rows_on_avx2: bool) -> Self {
        Self {
            format,
            block_bytes,
            row_group: GROUP,
            compact_scales: false,
            eight_rows_on_avx2,
        }
    }

    /// With compact k-quant scales and mins.
    const fn compact(self) -> Self {
        Self {
            compact_scales: true,
            ..self
        }
    }
}

impl Layout {
    /// The layout's row of the table: one arm per layout, every property of it in that arm.
    pub const fn spec(self) -> LayoutSpec {
        use LayoutSpec as S;
        use Q8KLayout as K;
        use Q8Layout as E;
        match self {
            Layout::Q8(E::Q4_0) => S::ggml(Format::Q4_0, Q4_0_BYTES),
            Layout::Q8(E::Q4_1) => S::ggml(Format::Q4_1, Q4_1_BYTES),
            Layout::Q8(E::Q5_0) => S::ggml(Format::Q5_0, Q5_0_BYTES),
            Layout::Q8(E::Q8_0) => S::ggml(Format::Q8_0, Q8_0_BYTES),
            Layout::Q8(E::Q4_1X16) => S::x16(Format::Q4_1, Q4_1_BYTES, false),
            Layout::Q8(E::Q5_0X16) => S::x16(Format::Q5_0, Q5_0_BYTES, true),
            Layout::Q8(E::Q8_0X16) => S::x16(Format::Q8_0, Q8_0_BYTES, true),
            Layout::Q8K(K::Q4K) => S::ggml(Format::Q4K, Q4K_BYTES),
            Layout::Q8K(K::Q6K) => S::ggml(Format::Q6K, Q6K_BYTES),
            Layout::Q8K(K::Q4KX16) => S::x16(Format::Q4K, q4k_x16::ROW_BLOCK_BYTES, false),
            Layout::Q8K(K::Q4KX16Compact) => {
                S::x16(Format::Q4K, q4k_x16::COMPACT_ROW_BLOCK_BYTES, false).compact()
            }
            Layout::Q8K(K::Q5KX16) => S::x16(Format::Q5K, q5k_x16::ROW_BLOCK_BYTES, true),
            Layout::Q8K(K::Q5KX16Compact) => {
                S::x16(Format::Q5K, q5k_x16::COMPACT_ROW_BLOCK_BYTES, true).compact()
            }
            Layout::Q8K(K::Q6KX16) => S::x16(Format::Q6K, Q6K_BYTES, true),
        }
    }

    /// The file format whose values the layout holds.
    pub fn format(self) -> Format {
        self.spec().format
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
        self.spec().block_bytes
    }

    /// Rows stored together: a matmul splits a matrix's rows only at multiples of this.
    pub fn row_group(self) -> usize {
        self.spec().row_group
    }

    /// Whether a k-quant layout keeps its 6-bit scales and mins as compact as ggml's.
    pub fn has_compact_scales(self) -> bool {
        self.spec().compact_scales
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
