//! Which kernel path runs: the best this CPU has, chosen once at run time, unless
//! `TAPER_KERNELS` forces one for comparisons (`scalar`, `avx2`, `avx-vnni`, `candle`, `exact`). The force
//! caps every runtime-dispatched piece alike (the quantized kernels, the f32 vector code, the
//! KV cache's conversions), so `TAPER_KERNELS=avx2` on an AVX-512 machine runs what an AVX2
//! machine runs. [`name`] is what the stats line, the stats panel and the bench show.

use crate::engine::model::kernels::Isa;
use std::sync::OnceLock;

/// What `TAPER_KERNELS` asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Forced {
    /// Nothing: the best path of this CPU.
    Best,
    /// No SIMD anywhere.
    Scalar,
    /// At most AVX2 + FMA + F16C (no AVX-512, no AVX-VNNI); on ARM, where there is nothing to
    /// leave out, the best path.
    Avx2,
    /// As `Avx2`, with AVX-VNNI where the CPU has it: what an Alder Lake or Zen 5 runs.
    AvxVnni,
    /// Every matrix through candle's `QMatMul`.
    Candle,
    /// Every matrix dequantized to f32, f32 activations: the reference of `taper perplexity`.
    Exact,
}

/// `TAPER_KERNELS`, read once; anything unknown is the best path.
pub fn forced() -> Forced {
    static FORCED: OnceLock<Forced> = OnceLock::new();
    *FORCED.get_or_init(|| match std::env::var("TAPER_KERNELS").as_deref() {
        Ok("scalar") => Forced::Scalar,
        Ok("avx2") => Forced::Avx2,
        Ok("avx-vnni") => Forced::AvxVnni,
        Ok("candle") => Forced::Candle,
        Ok("exact") => Forced::Exact,
        _ => Forced::Best,
    })
}

/// The quantized kernels' instruction set (what [`forced`] allows of what the CPU has).
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| match forced() {
        Forced::Scalar => Isa::Scalar,
        Forced::Avx2 => Isa::best_avx2(),
        Forced::AvxVnni => Isa::best_avx_vnni(),
        _ => Isa::best(),
    })
}

/// The path's name: `avx512-vnni`, `avx-vnni`, `avx2`, `neon-i8mm`, `neon-dotprod`, `neon`, `scalar`,
/// `candle` or `exact`.
pub fn name() -> &'static str {
    match forced() {
        Forced::Candle => "candle",
        Forced::Exact => "exact",
        _ => match isa() {
            Isa::Scalar => "scalar",
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(_) => "avx2",
            #[cfg(target_arch = "x86_64")]
            Isa::AvxVnni(_) => "avx-vnni",
            #[cfg(target_arch = "x86_64")]
            Isa::Vnni(_) => "avx512-vnni",
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(t) => t.name(),
        },
    }
}
