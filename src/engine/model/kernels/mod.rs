//! Quantized dot-product kernels for [`super::weights::linear::QLinear`], organised around the
//! data:
//!
//! - [`mod@format`]: the GGUF formats with kernels, one table row each (block size, the layout a
//!   file stores, the layout it is repacked into);
//! - [`layout`]: what a kernel reads, ggml's blocks or a repacked layout ([`packed`]: rows
//!   stored sixteen at a time), typed by the activations it multiplies ([`activations`]);
//! - [`cpu`]: what this CPU has, detected once; the tokens below and `vecmath`'s levels are
//!   both made from it;
//! - one folder per instruction set, each with a token proving the CPU has it and a match
//!   from layout to kernel: [`generic`] (plain Rust, the references),
//!   `x86/avx2`, `x86/avx_vnni`, `x86/avx512_vnni`, `arm/neon`.
//!
//! Adding a format is a row in [`format::FORMATS`] (its block size named in `blocks`), its
//! layouts' arms in [`Layout::spec`] and its reference; adding an instruction set is its
//! features in [`crate::engine::model::cpu::Features`], a folder and a variant of [`Isa`]. A layout an instruction
//! set has no kernel for runs its reference.
//!
//! Activations are quantized per row to 8-bit blocks: like ggml does for the 32-element
//! formats (Q8_0/Q8_1), and for the 256-element k-quants in super-blocks like ggml's Q8_K but
//! with a step per 32 ([`Q8KBlock`]), which keeps activations several times closer to exact
//! arithmetic.
//!
//! Every kernel computes weight rows against `R` activation rows at once (`R` = 1, 4 or 8;
//! [`Isa::wide_tiles`] says where eight), so a weight block is unpacked once for several rows
//! during prefill; one call covers many weight rows, so the per-call checks and dispatch are
//! paid once per chunk, not per output. The arithmetic done for one activation row is the
//! same sequence of operations whatever `R` is, so a row's result is bit-identical whether it
//! is computed alone or in a batch (the decoder's cached and fresh prefills must give the same
//! greedy tokens).

mod activations;
#[cfg(test)]
mod activations_tests;
#[cfg(target_arch = "aarch64")]
pub mod arm;
mod blocks;
pub mod format;
pub mod generic;
pub mod layout;
pub mod packed;
#[cfg(test)]
mod test_rng;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
pub mod x86;

pub use activations::{quantize_q8, quantize_q8k, round_to_f16, Q8Block, Q8KBlock, MAX_MULT};
pub use blocks::{f16_to_f32, QK, QK_K};
pub(crate) use blocks::{read_f16, scale_min_k4};
pub use format::Format;
pub use layout::{Layout, LayoutSpec, Q8KLayout, Q8Layout};

#[cfg(target_arch = "aarch64")]
use arm::neon::Neon;
#[cfg(target_arch = "x86_64")]
use x86::{avx2::Avx2, avx512_vnni::Vnni, avx_vnni::AvxVnni};

/// Which implementation runs the kernels.
#[derive(Clone, Copy, Debug)]
pub enum Isa {
    /// Plain Rust ([`generic`]).
    Scalar,
    /// AVX2, FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    Avx2(Avx2),
    /// AVX2 with AVX-VNNI (the 256-bit VEX `vpdpbusd`).
    #[cfg(target_arch = "x86_64")]
    AvxVnni(AvxVnni),
    /// AVX-512 VNNI (with AVX2, FMA, F16C).
    #[cfg(target_arch = "x86_64")]
    Vnni(Vnni),
    /// NEON, plain or with dotprod or i8mm (the token says which).
    #[cfg(target_arch = "aarch64")]
    Neon(Neon),
}

impl Isa {
    /// The fastest implementation this CPU supports.
    pub fn best() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = Vnni::detect() {
            return Self::Vnni(t);
        }
        #[cfg(target_arch = "aarch64")]
        let best = Self::Neon(Neon::best());
        #[cfg(not(target_arch = "aarch64"))]
        let best = Self::best_avx_vnni();
        best
    }

    /// The best path without AVX-512: AVX-VNNI where the CPU has it, else as
    /// [`Self::best_avx2`].
    pub fn best_avx_vnni() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = AvxVnni::detect() {
            return Self::AvxVnni(t);
        }
        Self::best_avx2()
    }

    /// The AVX2 kernels if the CPU has them (else scalar): the path of CPUs without AVX-512 or
    /// AVX-VNNI, kept for comparisons. On ARM, with no AVX-512 to leave out, the best path.
    pub fn best_avx2() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = Avx2::detect() {
            return Self::Avx2(t);
        }
        #[cfg(target_arch = "aarch64")]
        let without = Self::best();
        #[cfg(not(target_arch = "aarch64"))]
        let without = Self::Scalar;
        without
    }

    /// Every implementation this CPU supports, slowest first (for tests).
    pub fn all() -> Vec<Self> {
        #[allow(unused_mut)]
        let mut v = vec![Self::Scalar];
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = Avx2::detect() {
            v.push(Self::Avx2(t));
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = AvxVnni::detect() {
            v.push(Self::AvxVnni(t));
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = Vnni::detect() {
            v.push(Self::Vnni(t));
        }
        #[cfg(target_arch = "aarch64")]
        v.extend(Neon::detect_all().into_iter().map(Self::Neon));
        v
    }

    /// Whether this implementation has kernels for `layout` (so a matrix is worth repacking
    /// into it at load): every ggml layout everywhere; the sixteen-row ones on x86's SIMD
    /// paths, whose registers they are laid out for.
    pub fn runs(self, layout: Layout) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(_) | Isa::AvxVnni(_) | Isa::Vnni(_) => true,
            _ => !layout.is_packed(),
        }
    }

    /// Whether a matmul should hand this implementation's kernel for `layout` activation
    /// rows eight at a time rather than four: AVX-512's 32 registers hold eight rows' sums
    /// beside a sixteen-row block's unpacked weights, which then serve twice the rows (about
    /// a tenth of a SmolLM2 prefill). On AVX2 the five- to eight-bit sixteen-row layouts gain
    /// more from unpacking once for eight rows than the spills of 16 registers cost (a
    /// single-thread 128-row matmul: Q5_0×16 +31%, Q8_0×16 +22%, Q5_K×16 and Q6_K×16 +17%),
    /// while Q4_1×16 and Q4_K×16, whose nibbles unpack in a few operations, lose 8–10%.
    /// AVX-VNNI, the same registers, splits the same way (Q8_0×16 +14%, Q5_K×16 and Q6_K×16
    /// +10–15%, Q5_0×16 +5%; Q4_K×16 and Q4_1×16 −7%). NEON's 16 registers and the
    /// ggml-layout kernels' own tiles would spill.
    pub fn wide_tiles(self, layout: Layout) -> bool {
        #[cfg(target_arch = "x86_64")]
        match self {
            Isa::Vnni(_) => return layout.is_packed(),
            Isa::Avx2(_) | Isa::AvxVnni(_) => return layout.spec().eight_rows_on_avx2,
            _ => {}
        }
        let _ = layout;
        false
    }

    /// Whether activation rows are taken two at a time ([`crate::engine::model::weights`]'
    /// matmul) rather than one by one: on AVX2's sixteen-row layouts, whose two-row kernel
    /// streams the weights with the one-row kernel's prefetch, a verify pass of two tokens
    /// then costs 1.04–1.10 decode steps instead of 1.34–1.52 (SmolLM2 135M, Gemma 3 270M,
    /// Zen 2). Not measured elsewhere, so one row at a time there, as before.
    pub fn pair_tiles(self, layout: Layout) -> bool {
        #[cfg(target_arch = "x86_64")]
        if let Isa::Avx2(_) | Isa::AvxVnni(_) = self {
            return layout.is_packed();
        }
        let _ = layout;
        false
    }

    /// The layout a matrix of `format` is best stored in for this implementation, and the
    /// repacker that makes it (`None`: ggml's blocks as the file has them).
    pub fn packed_layout(self, format: Format) -> Option<(Layout, packed::Repack)> {
        let runs = format.spec().packed.iter().copied();
        runs.filter(|&(layout, _)| self.runs(layout))
            .min_by_key(|&(layout, _)| layout.has_compact_scales() != self.prefers_compact_scales())
    }

    /// Whether this implementation takes the k-quant layouts with their scales and mins as
    /// compact as ggml's (2.8% fewer bytes for Q4_K, 2.2% for Q5_K: a decode reads every
    /// weight once at the memory's speed) over a byte each. AVX-512 unpacks a super-block's
    /// for next to nothing (a single-thread, L2-resident Q4_K×16 matrix, GMAC/s, a byte each
    /// → compact: one row 70.7 → 73.9, eight rows 155.7 → 154.1). AVX2 keeps a byte each:
    /// since the unpacked bytes are read back as they were stored, its four-row tile loses
    /// little to the compact form (116 → 112 GMAC/s) and one row reads it from memory a
    /// little faster (two threads, a 116 MB matrix: 2.44 → 2.33 ms), but whole decodes did
    /// not get faster (nine alternating rounds of four models; and the same model loaded in
    /// both forms in one process, decode steps alternating: compact / a byte each 0.94–1.02,
    /// where one form in both slots gives 1.01–1.03). AVX-VNNI, unmeasured, follows AVX2.
    pub fn prefers_compact_scales(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if let Isa::Vnni(_) = self {
            return true;
        }
        false
    }
}

/// `out[c][r] = w[c] · a[r]` for the `out.len()` weight rows in `w` (stored in `layout`) and
/// `R` activation rows. Panics if the lengths disagree.
pub fn dot_q8<const R: usize>(
    isa: Isa,
    layout: Q8Layout,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    match isa {
        Isa::Scalar => generic::dot_q8(layout, w, a, out),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2(t) => x86::avx2::dot_q8(t, layout, w, a, out),
        #[cfg(target_arch = "x86_64")]
        Isa::AvxVnni(t) => x86::avx_vnni::dot_q8(t, layout, w, a, out),
        #[cfg(target_arch = "x86_64")]
        Isa::Vnni(t) => x86::avx512_vnni::dot_q8(t, layout, w, a, out),
        #[cfg(target_arch = "aarch64")]
        Isa::Neon(t) => arm::neon::dot_q8(t, layout, w, a, out),
    }
}

/// As [`dot_q8`] for the layouts that take k-quant activations.
pub fn dot_q8k<const R: usize>(
    isa: Isa,
    layout: Q8KLayout,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    match isa {
        Isa::Scalar => generic::dot_q8k(layout, w, a, out),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2(t) => x86::avx2::dot_q8k(t, layout, w, a, out),
        #[cfg(target_arch = "x86_64")]
        Isa::AvxVnni(t) => x86::avx_vnni::dot_q8k(t, layout, w, a, out),
        #[cfg(target_arch = "x86_64")]
        Isa::Vnni(t) => x86::avx512_vnni::dot_q8k(t, layout, w, a, out),
        #[cfg(target_arch = "aarch64")]
        Isa::Neon(t) => arm::neon::dot_q8k(t, layout, w, a, out),
    }
}
