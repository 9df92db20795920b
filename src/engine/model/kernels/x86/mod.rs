//! The x86-64 kernels: AVX2 (+FMA, +F16C), the same with AVX-VNNI's 256-bit `vpdpbusd`, and
//! AVX-512 VNNI, each chosen at run time behind a token that proves the CPU has it.

pub mod avx2;
pub mod avx512_vnni;
pub mod avx_vnni;
mod prefetch;
