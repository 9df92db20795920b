//! Rotary position embeddings: normal and NeoX pairing, partial rotary, per-frequency factors.

use super::arch::config::RopeConfig;

/// Precomputed frequencies for one kind of layer.
#[derive(Debug, Clone)]
pub struct Rope {
    inv_freq: Vec<f32>,
    n_rot: usize,
    neox: bool,
    attn_factor: f32,
}

impl Rope {
    /// `factors` divide the frequencies (LongRoPE, Llama 3 `rope_freqs`); one per rotated pair.
    pub fn new(cfg: &RopeConfig, factors: Option<&[f32]>) -> Self {
        let half = cfg.n_rot / 2;
        let inv_freq = (0..half)
            .map(|i| {
                let exponent = -2.0 * i as f64 / cfg.n_rot as f64;
                let factor = factors.and_then(|f| f.get(i)).copied().unwrap_or(1.0) as f64;
                (cfg.freq_scale as f64 * (cfg.base as f64).powf(exponent) / factor) as f32
            })
            .collect();
        Self {
            inv_freq,
            n_rot: cfg.n_rot,
            neox: cfg.neox,
            attn_factor: cfg.attn_factor,
        }
    }

    /// The rotations of several sequences' positions, one after the other: for each
    /// `(start, tokens)`, positions `start..start + tokens` (a batched pass's rows).
    pub fn table_for(&self, spans: &[(usize, usize)]) -> RopeTable {
        let mut table = self.table(0, 0);
        for &(start, tokens) in spans {
            table.cos_sin.extend(self.table(start, tokens).cos_sin);
        }
        table
    }

    /// The rotations of `tokens` positions from `start`, computed once per forward pass and
    /// shared by every layer of this kind (computing them per layer was 1% of a prefill).
    pub fn table(&self, start: usize, tokens: usize) -> RopeTable {
        let mut cos_sin = Vec::with_capacity(tokens * self.inv_freq.len());
        for t in 0..tokens {
            let pos = (start + t) as f64;
            cos_sin.extend(self.inv_freq.iter().map(|&f| {
                let theta = pos * f as f64;
                (
                    theta.cos() as f32 * self.attn_factor,
                    theta.sin() as f32 * self.attn_factor,
                )
            }));
        }
        RopeTable {
            cos_sin,
            half: self.n_rot / 2,
            neox: self.neox,
        }
    }
}

/// Precomputed `(cos, sin)` of each rotated pair at each position of one pass.
pub struct RopeTable {
    cos_sin: Vec<(f32, f32)>,
    half: usize,
    neox: bool,
}

impl RopeTable {
    /// Rotates `data`, laid out `(tokens, heads, head_dim)`, for the table's positions.
    pub fn rotate(&self, data: &mut [f32], heads: usize, head_dim: usize) {
        let half = self.half;
        if half == 0 {
            return;
        }
        for (t, token) in data.chunks_exact_mut(heads * head_dim).enumerate() {
            let cos_sin = &self.cos_sin[t * half..(t + 1) * half];
            for v in token.chunks_exact_mut(head_dim) {
                for (i, &(cos, sin)) in cos_sin.iter().enumerate() {
                    let (a, b) = if self.neox {
                        (i, i + half)
                    } else {
                        (2 * i, 2 * i + 1)
                    };
                    let (x0, x1) = (v[a], v[b]);
                    v[a] = x0 * cos - x1 * sin;
                    v[b] = x0 * sin + x1 * cos;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(neox: bool, n_rot: usize) -> RopeConfig {
        RopeConfig {
            base: 10_000.0,
            freq_scale: 1.0,
            n_rot,
            neox,
            attn_factor: 1.0,
        }
    }

    #[test]
    fn position_zero_is_identity() {
        let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
        let mut y = x.clone();
        Rope::new(&cfg(true, 8), None)
            .table(0, 1)
            .rotate(&mut y, 2, 8);
        assert_eq!(x, y);
    }

    #[test]
    fn dims_past_n_rot_pass_through() {
        let mut y = vec![1f32; 8];
        Rope::new(&cfg(true, 4), None)
            .table(5, 1)
            .rotate(&mut y, 1, 8);
        assert_eq!(&y[4..], &[1.0; 4]);
        assert!(y[..4].iter().any(|v| (v - 1.0).abs() > 1e-3));
    }

    #[test]
    fn rotation_keeps_pair_norms() {
        let x: Vec<f32> = (1..9).map(|i| i as f32).collect();
        let norm = |v: &[f32]| v.iter().map(|a| a * a).sum::<f32>();
        for neox in [false, true] {
            let mut y = x.clone();
            Rope::new(&cfg(neox, 8), None)
                .table(7, 1)
                .rotate(&mut y, 1, 8);
            assert!((norm(&x) - norm(&y)).abs() < 1e-3);
        }
    }
}
