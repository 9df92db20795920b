//! The AVX2 (+FMA, +F16C) path: its token, and which kernel runs each layout ([`ggml`] for
//! the files' blocks, [`x16`] for the sixteen-row layouts). [`ops`] holds the helpers every
//! x86 kernel shares.

mod ggml;
pub mod ops;
pub mod x16;

use crate::engine::model::cpu;
use crate::engine::model::kernels::layout::{Q8KLayout, Q8Layout};
use crate::engine::model::kernels::{Q8Block, Q8KBlock};

/// Proof that the CPU has AVX2, FMA and F16C.
#[derive(Clone, Copy, Debug)]
pub struct Avx2(());

impl Avx2 {
    pub fn detect() -> Option<Self> {
        let cpu = cpu::features();
        (cpu.avx2 && cpu.fma && cpu.f16c).then_some(Self(()))
    }
}

/// `out[c][r]` = weight row `c` of `w` · `a[r]`: every layout that takes [`Q8Block`]s.
pub fn dot_q8<const R: usize>(
    t: Avx2,
    layout: Q8Layout,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    match layout {
        Q8Layout::Q4_0 => ggml::dot_q4_0(t, w, a, out),
        Q8Layout::Q4_1 => ggml::dot_q4_1(t, w, a, out),
        Q8Layout::Q5_0 => ggml::dot_q5_0(t, w, a, out),
        Q8Layout::Q8_0 => ggml::dot_q8_0(t, w, a, out),
        Q8Layout::Q4_1X16 => x16::dot_q4_1_x16(t, w, a, out),
        Q8Layout::Q5_0X16 => x16::dot_q5_0_x16(t, w, a, out),
        Q8Layout::Q8_0X16 => x16::dot_q8_0_x16(t, w, a, out),
    }
}

/// As [`dot_q8`] for the layouts that take [`Q8KBlock`]s.
pub fn dot_q8k<const R: usize>(
    t: Avx2,
    layout: Q8KLayout,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    match layout {
        Q8KLayout::Q4K => ggml::dot_q4k(t, w, a, out),
        Q8KLayout::Q6K => ggml::dot_q6k(t, w, a, out),
        Q8KLayout::Q4KX16 => x16::dot_q4k_x16::<_, R, false>(t, w, a, out),
        Q8KLayout::Q4KX16Compact => x16::dot_q4k_x16::<_, R, true>(t, w, a, out),
        Q8KLayout::Q5KX16 => x16::dot_q5k_x16::<_, R, false>(t, w, a, out),
        Q8KLayout::Q5KX16Compact => x16::dot_q5k_x16::<_, R, true>(t, w, a, out),
        Q8KLayout::Q6KX16 => x16::dot_q6k_x16(t, w, a, out),
    }
}
