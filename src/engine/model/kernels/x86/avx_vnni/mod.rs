//! The AVX-VNNI path (Alder Lake and later, Zen 5): AVX2 with the 256-bit VEX `vpdpbusd`,
//! which sums four byte products per lane in one instruction where AVX2 needs
//! `vpmaddubsw` + `vpmaddwd` and an add. The sixteen-row kernels ([`super::avx2::x16`]) run
//! with it; ggml's layouts, which only the repacked ones replace on this path, run AVX2's.
//! The integer sums are the same, so every result is the same bits as AVX2's.

use super::avx2::{self, x16, x16::BytePath, Avx2};
use crate::engine::model::cpu;
use crate::engine::model::kernels::layout::{Q8KLayout, Q8Layout};
use crate::engine::model::kernels::{Q8Block, Q8KBlock};

/// Proof that the CPU has AVX2, FMA, F16C and AVX-VNNI.
#[derive(Clone, Copy, Debug)]
pub struct AvxVnni(Avx2);

impl AvxVnni {
    pub fn detect() -> Option<Self> {
        Avx2::detect().filter(|_| cpu::features().avxvnni).map(Self)
    }
}

// SAFETY: an `AvxVnni` exists only where `detect` found AVX2, FMA, F16C and AVX-VNNI.
unsafe impl BytePath for AvxVnni {
    const VNNI: bool = true;
}

/// `out[c][r]` = weight row `c` of `w` · `a[r]`: every layout that takes [`Q8Block`]s.
pub fn dot_q8<const R: usize>(
    t: AvxVnni,
    layout: Q8Layout,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    match layout {
        Q8Layout::Q4_1X16 => x16::dot_q4_1_x16(t, w, a, out),
        Q8Layout::Q5_0X16 => x16::dot_q5_0_x16(t, w, a, out),
        Q8Layout::Q8_0X16 => x16::dot_q8_0_x16(t, w, a, out),
        Q8Layout::Q4_0 | Q8Layout::Q4_1 | Q8Layout::Q5_0 | Q8Layout::Q8_0 => {
            avx2::dot_q8(t.0, layout, w, a, out)
        }
    }
}

/// As [`dot_q8`] for the layouts that take [`Q8KBlock`]s.
pub fn dot_q8k<const R: usize>(
    t: AvxVnni,
    layout: Q8KLayout,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    match layout {
        Q8KLayout::Q4KX16 => x16::dot_q4k_x16::<_, R, false>(t, w, a, out),
        Q8KLayout::Q4KX16Compact => x16::dot_q4k_x16::<_, R, true>(t, w, a, out),
        Q8KLayout::Q5KX16 => x16::dot_q5k_x16::<_, R, false>(t, w, a, out),
        Q8KLayout::Q5KX16Compact => x16::dot_q5k_x16::<_, R, true>(t, w, a, out),
        Q8KLayout::Q6KX16 => x16::dot_q6k_x16(t, w, a, out),
        Q8KLayout::Q4K | Q8KLayout::Q6K => avx2::dot_q8k(t.0, layout, w, a, out),
    }
}
