//! What attention reads: a tile's keys and a run of values, as f32 or as the KV cache's f16
//! numbers converted exactly as they are loaded, and the loads the scoring and weighting loops
//! of [`super::block`] make from either, `N` lanes at a time.

use crate::engine::model::kv_cache::f16_lanes::f16_lanes;

/// Where the loops load their numbers from, `N` at a time as f32.
pub(super) trait Source: Copy {
    fn lanes<const N: usize>(self, at: usize) -> [f32; N];
    /// How many numbers there are.
    fn len(self) -> usize;
    /// [`Self::lanes`] without the bounds check, for the innermost loops of
    /// [`super::block`], which check their whole range once before they start (a
    /// check and a branch per load were about a third of the scoring loop's instructions).
    ///
    /// # Safety
    /// `at + N <= self.len()`.
    unsafe fn lanes_unchecked<const N: usize>(self, at: usize) -> [f32; N];
    /// Asks for the cache line holding number `at`, if there is one: a hint, never a fault.
    fn prefetch(self, at: usize);
}

/// Asks for the cache line holding `x[at]` (nothing past the end of `x`): the streaming loops
/// of [`super::stream`] read the cache from memory, and the hardware prefetchers
/// alone kept too few lines in flight.
#[inline(always)]
fn prefetch_line<T>(x: &[T], at: usize) {
    let Some(p) = x.get(at) else { return };
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` (SSE, in every x86-64) only hints; `p` is a valid reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(p).cast());
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `prfm` only hints and never faults; `p` is a valid reference.
    unsafe {
        std::arch::asm!(
            "prfm pldl1keep, [{p}]",
            p = in(reg) std::ptr::from_ref(p),
            options(nostack, preserves_flags, readonly)
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

#[derive(Clone, Copy)]
pub(super) struct F32s<'a>(pub(super) &'a [f32]);

impl Source for F32s<'_> {
    #[inline(always)]
    fn lanes<const N: usize>(self, at: usize) -> [f32; N] {
        load(&self.0[at..])
    }
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    unsafe fn lanes_unchecked<const N: usize>(self, at: usize) -> [f32; N] {
        debug_assert!(at + N <= self.0.len());
        // SAFETY: the caller guarantees `at + N <= len`; an unaligned read of plain floats.
        unsafe { std::ptr::read_unaligned(self.0.as_ptr().add(at).cast::<[f32; N]>()) }
    }
    #[inline(always)]
    fn prefetch(self, at: usize) {
        prefetch_line(self.0, at)
    }
}

/// f16 bits, converted on the calling body's instruction set `ISA`.
#[derive(Clone, Copy)]
pub(super) struct F16s<'a, const ISA: u8>(pub(super) &'a [u16]);

impl<const ISA: u8> Source for F16s<'_, ISA> {
    #[inline(always)]
    fn lanes<const N: usize>(self, at: usize) -> [f32; N] {
        f16_lanes::<N, ISA>(&self.0[at..])
    }
    #[inline(always)]
    fn len(self) -> usize {
        self.0.len()
    }
    /// Checked all the same: the f16 cache is read in place only by a decode step's few rows,
    /// where the conversion, not the check, is the cost.
    #[inline(always)]
    unsafe fn lanes_unchecked<const N: usize>(self, at: usize) -> [f32; N] {
        self.lanes(at)
    }
    #[inline(always)]
    fn prefetch(self, at: usize) {
        prefetch_line(self.0, at)
    }
}

/// Keys read from `src`: dimension `i`'s run starts at `i · stride`.
#[derive(Clone, Copy)]
pub(super) struct Keys<S> {
    pub(super) src: S,
    pub(super) stride: usize,
}

/// The first `N` values of `x`, as one value that lives in registers.
#[inline(always)]
fn load<const N: usize>(x: &[f32]) -> [f32; N] {
    let mut out = [0f32; N];
    out.copy_from_slice(&x[..N]);
    out
}
