//! What this CPU has: every instruction-set feature a dispatcher asks about, detected once, in
//! one place, and what `TAPER_KERNELS` allows of it ([`forced`]). Both CPU-dependent systems
//! read it: the quantized kernels' tokens (`kernels::Isa`: a token is made only if the
//! features its kernels are compiled for are here) and the f32 vector code's levels
//! (`vecmath::level`), as do the KV cache's f16 conversion and the prefetch distance. The
//! tokens and levels cap themselves by [`forced`]; `runtime::kernel_path` names the result.

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

/// The values `TAPER_KERNELS` takes (`best` and `default`, like unset, mean the best path).
pub const FORCED_NAMES: [&str; 7] = [
    "best", "default", "scalar", "avx2", "avx-vnni", "candle", "exact",
];

/// A set `TAPER_KERNELS` that names no path, as a sentence (the commands refuse to start with
/// it rather than quietly run the best path instead of the one asked for).
pub fn check_forced_env() -> Result<(), String> {
    match std::env::var("TAPER_KERNELS") {
        Ok(v) if !v.is_empty() && !FORCED_NAMES.contains(&v.as_str()) => Err(format!(
            "TAPER_KERNELS={v:?} names no kernel path; it takes {} (or unset it for the best \
             path of this CPU)",
            FORCED_NAMES.join(", ")
        )),
        _ => Ok(()),
    }
}

/// `TAPER_KERNELS`, read once; anything unknown is the best path (the commands have refused
/// it already: [`check_forced_env`]).
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

/// The features taper's code paths are compiled for (false where the architecture has no
/// such feature).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    pub avx: bool,
    pub avx2: bool,
    pub fma: bool,
    pub f16c: bool,
    pub avx512f: bool,
    pub avx512bw: bool,
    pub avx512vl: bool,
    pub avx512vnni: bool,
    /// The 256-bit VEX `vpdpbusd` (Alder Lake and later, Zen 5).
    pub avxvnni: bool,
    /// ARM's `sdot` (FEAT_DotProd).
    pub dotprod: bool,
    /// ARM's `smmla` (FEAT_I8MM).
    pub i8mm: bool,
}

/// This CPU's features, detected on the first call.
pub fn features() -> Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    *FEATURES.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Features {
    use std::arch::is_x86_feature_detected as has;
    Features {
        avx: has!("avx"),
        avx2: has!("avx2"),
        fma: has!("fma"),
        f16c: has!("f16c"),
        avx512f: has!("avx512f"),
        avx512bw: has!("avx512bw"),
        avx512vl: has!("avx512vl"),
        avx512vnni: has!("avx512vnni"),
        avxvnni: has!("avxvnni"),
        ..Features::default()
    }
}

#[cfg(target_arch = "aarch64")]
fn detect() -> Features {
    use std::arch::is_aarch64_feature_detected as has;
    Features {
        dotprod: has!("dotprod"),
        i8mm: has!("i8mm"),
        ..Features::default()
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn detect() -> Features {
    Features::default()
}
