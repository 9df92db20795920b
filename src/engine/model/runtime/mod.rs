//! What a forward pass runs on besides the weights: the CPU's kernel path (chosen once,
//! `TAPER_KERNELS` can force one), the buffers a pass reuses, and the keep-awake of the
//! compute pool's threads during a pass.

pub(super) mod awake;
pub mod kernel_path;
pub mod scratch;
