//! The aarch64 kernels: NEON at three levels (plain, dotprod, i8mm), chosen at run time.

pub mod neon;
