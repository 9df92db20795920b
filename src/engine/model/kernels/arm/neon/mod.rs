//! The ARM path: which NEON level this CPU has, the tokens that prove it, and the entry points
//! that hand each weight format to its kernels ([`mod@q8`], [`kquant`]).
//!
//! Three levels, chosen at run time: plain NEON (every aarch64 CPU; widening multiplies),
//! `dotprod` (`sdot`: four `i8 × i8` products summed per lane) and `i8mm` (`smmla`: a 2×8 by
//! 8×2 matrix product, so two weight rows against two activation rows per instruction, used
//! when activation rows come in pairs, as in prefill's four).
//!
//! Every kernel sums the integer products of a block exactly and then does the float
//! arithmetic of [`crate::engine::model::kernels::generic::ggml`] for each row, in its order, without fused multiply-adds:
//! results are bit-identical to the scalar kernels' on every level, so a row's result never
//! depends on the level, on the rows computed with it, or on where its weight row falls in a
//! pair.
//!
//! Soundness: `sdot` and `smmla` are inline assembly (their intrinsics are not stable Rust),
//! run only by [`ops::dot`] for the [`Sdot`] and [`Smmla`] tokens and by
//! [`Smmla::mmla`]. The tokens have private fields and are made only here, from a [`Neon`]
//! whose level [`Neon::detect_all`] found at run time, and the `#[target_feature]` entry points
//! of each level are called only with them. Everything else is NEON, which every aarch64 CPU
//! has (the one `unsafe` call per entry into code compiled for it). Lengths are checked by the
//! entry points ([`dot_q8`], [`dot_q8k`], with [`generic::check_rows`]); every load takes a fixed-size array and none
//! needs alignment.

mod kquant;
mod ops;
mod q8;

use crate::engine::model::kernels::generic;
use crate::engine::model::kernels::layout::{Q8KLayout, Q8Layout};
use crate::engine::model::kernels::{Q8Block, Q8KBlock};
use kquant::{Q4K, Q6K};
use q8::{Format, Q4_0, Q4_1, Q5_0, Q8_0};

/// The NEON levels, slowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// NEON alone (part of every aarch64 CPU).
    Plain,
    /// With the dot-product instructions (FEAT_DotProd).
    Dotprod,
    /// With the dot-product and 8-bit matrix-multiply instructions (FEAT_I8MM).
    I8mm,
}

/// Proof that the CPU has NEON at [`Neon::level`] (the payload of `Isa::Neon`).
#[derive(Clone, Copy, Debug)]
pub struct Neon(Level);

impl Neon {
    /// Every level this CPU has, slowest first (plain NEON always).
    pub fn detect_all() -> Vec<Self> {
        let cpu = crate::engine::model::cpu::features();
        let (dotprod, i8mm) = (cpu.dotprod, cpu.dotprod && cpu.i8mm);
        let mut v = vec![Self(Level::Plain)];
        if dotprod {
            v.push(Self(Level::Dotprod));
        }
        if i8mm {
            v.push(Self(Level::I8mm));
        }
        v
    }

    /// The fastest level this CPU has.
    pub fn best() -> Self {
        *Self::detect_all()
            .last()
            .expect("plain NEON is always there")
    }

    pub fn level(self) -> Level {
        self.0
    }

    /// The kernel path's name, as `taper ask --stats` shows it.
    pub fn name(self) -> &'static str {
        match self.0 {
            Level::Plain => "neon",
            Level::Dotprod => "neon-dotprod",
            Level::I8mm => "neon-i8mm",
        }
    }
}

/// Proof of plain NEON (always true on aarch64; a token so that every level's kernels take one).
#[derive(Clone, Copy, Debug)]
pub(super) struct Plain(());

/// Proof that the CPU has `sdot`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sdot(());

/// Proof that the CPU has `sdot` and `smmla`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Smmla(());

impl Smmla {
    /// The same proof, for the kernels that need `sdot` only.
    pub(super) fn sdot(self) -> Sdot {
        Sdot(())
    }
}

/// `out[c][r]` = weight row `c` of `w` · `a[r]`: every layout that takes [`Q8Block`]s (the
/// sixteen-row layouts, never repacked here, by their plain references).
pub fn dot_q8<const R: usize>(
    t: Neon,
    layout: Q8Layout,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    let f = match layout {
        Q8Layout::Q4_0 => q8::<Q4_0, R>,
        Q8Layout::Q4_1 => q8::<Q4_1, R>,
        Q8Layout::Q5_0 => q8::<Q5_0, R>,
        Q8Layout::Q8_0 => q8::<Q8_0, R>,
        // The sixteen-row layouts, never repacked here (`Isa::runs`): their references.
        _ => return generic::dot_q8(layout, w, a, out),
    };
    let row_bytes = generic::check_rows(layout.into(), w, a, out.len());
    if row_bytes == 0 {
        return;
    }
    // SAFETY: NEON is part of every aarch64 CPU (a `Neon` exists only there).
    unsafe { f(t, w, row_bytes, a, out) }
}

/// [`dot_q8`] for format `F` on the token's level.
#[target_feature(enable = "neon")]
fn q8<F: Format, const R: usize>(
    t: Neon,
    w: &[u8],
    row_bytes: usize,
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    #[target_feature(enable = "neon,dotprod")]
    fn dotprod<F: Format, const R: usize>(
        t: Sdot,
        w: &[u8],
        row_bytes: usize,
        a: &[&[Q8Block]; R],
        out: &mut [[f32; R]],
    ) {
        q8::rows::<F, _, R>(t, w, row_bytes, a, out)
    }
    #[target_feature(enable = "neon,dotprod,i8mm")]
    fn i8mm<F: Format, const R: usize>(
        t: Smmla,
        w: &[u8],
        row_bytes: usize,
        a: &[&[Q8Block]; R],
        out: &mut [[f32; R]],
    ) {
        // `smmla` takes activation rows two at a time; decode's single row runs on `sdot`.
        if R.is_multiple_of(2) {
            q8::rows_mmla::<F, R>(t, w, row_bytes, a, out)
        } else {
            q8::rows::<F, _, R>(t.sdot(), w, row_bytes, a, out)
        }
    }
    match t.0 {
        Level::Plain => q8::rows::<F, _, R>(Plain(()), w, row_bytes, a, out),
        // SAFETY: a `Neon` at this level exists only if the CPU has dotprod (`detect_all`).
        Level::Dotprod => unsafe { dotprod::<F, R>(Sdot(()), w, row_bytes, a, out) },
        // SAFETY: a `Neon` at this level exists only if the CPU has dotprod and i8mm.
        Level::I8mm => unsafe { i8mm::<F, R>(Smmla(()), w, row_bytes, a, out) },
    }
}

/// As [`dot_q8`] for the layouts that take [`Q8KBlock`]s.
pub fn dot_q8k<const R: usize>(
    t: Neon,
    layout: Q8KLayout,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    let f = match layout {
        Q8KLayout::Q4K => q8k::<Q4K, R>,
        Q8KLayout::Q6K => q8k::<Q6K, R>,
        // As in `dot_q8`.
        _ => return generic::dot_q8k(layout, w, a, out),
    };
    let row_bytes = generic::check_rows(layout.into(), w, a, out.len());
    if row_bytes == 0 {
        return;
    }
    // SAFETY: NEON is part of every aarch64 CPU (a `Neon` exists only there).
    unsafe { f(t, w, row_bytes, a, out) }
}

/// [`dot_q8k`] for format `F` on the token's level.
#[target_feature(enable = "neon")]
fn q8k<F: kquant::Format, const R: usize>(
    t: Neon,
    w: &[u8],
    row_bytes: usize,
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    #[target_feature(enable = "neon,dotprod")]
    fn dotprod<F: kquant::Format, const R: usize>(
        t: Sdot,
        w: &[u8],
        row_bytes: usize,
        a: &[&[Q8KBlock]; R],
        out: &mut [[f32; R]],
    ) {
        kquant::rows::<F, _, R>(t, w, row_bytes, a, out)
    }
    #[target_feature(enable = "neon,dotprod,i8mm")]
    fn i8mm<F: kquant::Format, const R: usize>(
        t: Smmla,
        w: &[u8],
        row_bytes: usize,
        a: &[&[Q8KBlock]; R],
        out: &mut [[f32; R]],
    ) {
        if R.is_multiple_of(2) {
            kquant::rows_mmla::<F, R>(t, w, row_bytes, a, out)
        } else {
            kquant::rows::<F, _, R>(t.sdot(), w, row_bytes, a, out)
        }
    }
    match t.0 {
        Level::Plain => kquant::rows::<F, _, R>(Plain(()), w, row_bytes, a, out),
        // SAFETY: a `Neon` at this level exists only if the CPU has dotprod (`detect_all`).
        Level::Dotprod => unsafe { dotprod::<F, R>(Sdot(()), w, row_bytes, a, out) },
        // SAFETY: a `Neon` at this level exists only if the CPU has dotprod and i8mm.
        Level::I8mm => unsafe { i8mm::<F, R>(Smmla(()), w, row_bytes, a, out) },
    }
}
