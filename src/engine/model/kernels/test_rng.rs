//! A small deterministic random source for the kernels' tests (xorshift64).

pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [-0.5, 0.5).
    pub(super) fn f32(&mut self) -> f32 {
        (self.u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
    /// An activation: uniform in [-0.5, 0.5), one in 16 scaled by 50 (the outliers of real
    /// activations, which set a block's step).
    pub(super) fn activation(&mut self) -> f32 {
        let v = self.f32();
        if self.u64().is_multiple_of(16) {
            v * 50.0
        } else {
            v
        }
    }
    /// An f16 scale: random sign, magnitude 2⁻¹⁰..2, sometimes zero.
    pub(super) fn f16(&mut self) -> [u8; 2] {
        let r = self.u64();
        if r.is_multiple_of(17) {
            return [0, 0];
        }
        let h = (((r >> 8) & 1) << 15) | ((5 + (r >> 9) % 12) << 10) | ((r >> 20) & 0x3FF);
        (h as u16).to_le_bytes()
    }
}
