//! Which kernel path runs: the best this CPU has, chosen once at run time, unless
//! `TAPER_KERNELS` forces one for comparisons (`scalar`, `avx2`, `avx-vnni`, `candle`, `exact`). The force
//! caps every runtime-dispatched piece alike (the quantized kernels, the f32 vector code, the
//! KV cache's conversions), so `TAPER_KERNELS=avx2` on an AVX-512 machine runs what an AVX2
//! machine runs. [`name`] is what the stats line, the stats panel and the bench show.

pub use crate::engine::model::cpu::{forced, Forced};
use crate::engine::model::kernels::Isa;
use std::sync::OnceLock;

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
