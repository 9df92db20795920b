//! Tensor data for shape-only files: sane random weights, written fast.
//!
//! Quantizing gigabytes of random floats would take minutes, so each ggml type gets one pool
//! of valid blocks, quantized once by candle from a modest random buffer (finite, small f16
//! scales by construction), and every tensor of that type is filled by cycling through the
//! pool from a per-tensor starting block. Timing does not depend on the values; sanity does
//! (no NaN or Inf), and that the pool guarantees. The file is streamed to disk.

use super::shape::ShapePlan;
use anyhow::Result;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;

/// How one tensor's data is made.
#[derive(Debug, Clone, PartialEq)]
pub enum Fill {
    /// Blocks from the type's random pool (weight matrices).
    Random,
    /// 1.0 everywhere (norm weights, so activations keep their scale).
    Ones,
    /// Small deterministic values (biases).
    Small,
    /// Exactly these f32 values (rope factors).
    Values(Vec<f32>),
}

/// Values of random weights: uniform in ±WEIGHT_RANGE, about what trained projections hold.
const WEIGHT_RANGE: f32 = 0.05;
/// Pool rows of 256 values (the K-quant block): 1 Mi values, quantized in well under a second.
const POOL_ROWS: usize = 4096;

/// One type's pool of valid, encoded blocks.
struct Pool {
    bytes: Vec<u8>,
    type_size: usize,
}

impl Pool {
    fn new(dtype: GgmlDType, seed: u64) -> Result<Self> {
        let mut rng = StdRng::seed_from_u64(seed);
        let values: Vec<f32> = (0..POOL_ROWS * 256)
            .map(|_| rng.random_range(-WEIGHT_RANGE..WEIGHT_RANGE))
            .collect();
        let tensor = Tensor::from_vec(values, (POOL_ROWS, 256), &Device::Cpu)?;
        let q = QTensor::quantize(&tensor, dtype)?;
        Ok(Self {
            bytes: q.data()?.into_owned(),
            type_size: dtype.type_size(),
        })
    }

    /// Writes `len` bytes (a whole number of blocks) cycling from block `start`.
    fn write_cycling(&self, out: &mut dyn Write, start: usize, len: u64) -> std::io::Result<()> {
        let blocks = self.bytes.len() / self.type_size;
        let mut at = (start % blocks) * self.type_size;
        let mut left = len;
        while left > 0 {
            let n = ((self.bytes.len() - at) as u64).min(left) as usize;
            out.write_all(&self.bytes[at..at + n])?;
            left -= n as u64;
            at = 0;
        }
        Ok(())
    }
}

/// A cheap stable hash of a tensor name, to start each tensor at another block.
fn name_hash(name: &str) -> usize {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    }) as usize
}

fn f32_bytes(values: impl Iterator<Item = f32>) -> Vec<u8> {
    values.flat_map(f32::to_le_bytes).collect()
}

/// Writes the planned file to `path`, streaming tensor data; returns the bytes written.
pub fn write(plan: &ShapePlan, path: &Path) -> Result<u64> {
    let mut pools: HashMap<GgmlDType, Pool> = HashMap::new();
    for (spec, fill) in plan.writer.tensors().iter().zip(&plan.fills) {
        if *fill == Fill::Random && !pools.contains_key(&spec.dtype) {
            let seed = 0x7a9e_u64 + pools.len() as u64;
            pools.insert(spec.dtype, Pool::new(spec.dtype, seed)?);
        }
    }
    let file = std::fs::File::create(path)?;
    let mut index = 0;
    let written = plan
        .writer
        .write(BufWriter::with_capacity(1 << 20, file), |spec, out| {
            let fill = &plan.fills[index];
            index += 1;
            let n = spec.elem_count();
            match fill {
                Fill::Random => {
                    let pool = &pools[&spec.dtype];
                    pool.write_cycling(out, name_hash(&spec.name), spec.size_bytes())
                }
                Fill::Ones => out.write_all(&f32_bytes(std::iter::repeat_n(1.0, n))),
                Fill::Small => {
                    out.write_all(&f32_bytes((0..n).map(|i| 0.01 * ((i % 17) as f32 - 8.0))))
                }
                Fill::Values(v) => out.write_all(&f32_bytes(v.iter().copied())),
            }
        })?;
    Ok(written)
}

/// Llama 3's rope frequency factors (`rope_freqs.weight`), computed as llama.cpp's converter
/// does from `rope_scaling` (low_freq_factor 1, high_freq_factor 4).
pub fn llama3_rope_factors(base: f64, rope_dim: usize, factor: f64, original: usize) -> Vec<f32> {
    let (low_freq_factor, high_freq_factor) = (1.0, 4.0);
    let old_context = original as f64;
    let low_freq_wavelen = old_context / low_freq_factor;
    let high_freq_wavelen = old_context / high_freq_factor;
    (0..rope_dim / 2)
        .map(|i| {
            let freq = 1.0 / base.powf(2.0 * i as f64 / rope_dim as f64);
            let wavelen = 2.0 * std::f64::consts::PI / freq;
            let f = if wavelen < high_freq_wavelen {
                1.0
            } else if wavelen > low_freq_wavelen {
                factor
            } else {
                let smooth = (old_context / wavelen - low_freq_factor)
                    / (high_freq_factor - low_freq_factor);
                1.0 / ((1.0 - smooth) / factor + smooth)
            };
            f as f32
        })
        .collect()
}

/// LongRoPE factor pairs (long, short) of plausible magnitude: long factors rise from 1 to
/// about 30 across the rotary pairs, short ones from 1 to 1.5 (Phi-4-mini's own values are
/// in these ranges; the exact values do not change the cost).
pub fn longrope_factors(pairs: usize) -> (Vec<f32>, Vec<f32>) {
    let t = |i: usize| i as f32 / (pairs.max(2) - 1) as f32;
    let long = (0..pairs).map(|i| 30f32.powf(t(i))).collect();
    let short = (0..pairs).map(|i| 1.0 + 0.5 * t(i)).collect();
    (long, short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_hold_finite_values_for_every_type_the_catalogue_uses() {
        for dtype in [
            GgmlDType::Q4K,
            GgmlDType::Q5K,
            GgmlDType::Q6K,
            GgmlDType::Q5_0,
            GgmlDType::Q8_0,
            GgmlDType::Q4_1,
            GgmlDType::F16,
        ] {
            let pool = Pool::new(dtype, 1).unwrap();
            let n = pool.bytes.len() / dtype.type_size() * dtype.block_size();
            let rows = n / 256;
            let storage = candle_core::quantized::QStorage::from_data(
                std::borrow::Cow::Borrowed(&pool.bytes[..]),
                &Device::Cpu,
                dtype,
            )
            .unwrap();
            let q = QTensor::new(storage, (rows, 256)).unwrap();
            let values: Vec<f32> = q
                .dequantize(&Device::Cpu)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            assert!(
                values.iter().all(|v| v.is_finite() && v.abs() < 0.1),
                "{dtype:?}"
            );
        }
    }

    #[test]
    fn cycling_writes_exactly_the_requested_bytes() {
        let pool = Pool {
            bytes: (0u8..12).collect(),
            type_size: 4,
        };
        let mut out = Vec::new();
        pool.write_cycling(&mut out, 2, 20).unwrap();
        assert_eq!(
            out,
            [8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3]
        );
    }

    #[test]
    fn llama3_factors_keep_high_frequencies_and_scale_low_ones() {
        let f = llama3_rope_factors(500_000.0, 64, 32.0, 8192);
        assert_eq!(f.len(), 32);
        assert_eq!(f[0], 1.0);
        assert_eq!(f[31], 32.0);
        assert!(f.windows(2).all(|w| w[0] <= w[1]));
    }
}
