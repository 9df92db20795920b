//! `QLinear`'s kernels (scalar and, where the CPU has them, AVX2 and AVX-512 VNNI, or NEON)
//! against a plain f64 reference over candle's dequantized weights, against candle's own
//! `QMatMul`, for batch invariance, AVX-512 VNNI's k-quant kernels bit for bit against AVX2's,
//! every NEON level bit for bit against the scalar kernels, and results that do not depend on
//! what a reused buffer held before. No timing.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};
use std::sync::Arc;
use taper::engine::model::kernels::{Format, Isa};
use taper::engine::model::linear::{forward_group_in, QLinear};
use taper::engine::model::scratch::PassScratch;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
    /// Roughly normal, with occasional outliers (what real activations look like).
    fn value(&mut self) -> f32 {
        let v = self.next() + self.next() + self.next() + self.next();
        if self.next() > 0.49 {
            v * 8.0
        } else {
            v
        }
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.value()).collect()
    }
}

fn weights(dtype: GgmlDType, out: usize, k: usize, rng: &mut Rng) -> Arc<QTensor> {
    let w = Tensor::from_vec(rng.vec(out * k), (out, k), &Device::Cpu).unwrap();
    Arc::new(QTensor::quantize(&w, dtype).unwrap())
}

/// Reference `x · Wᵀ` in f64 over the dequantized weights, with the bound on the error that
/// quantizing the activations may cause: each activation moves by at most half its block's
/// step (`amax / 127 / 2`) plus the f16 rounding of the scale (127 · 2⁻¹¹ steps), Q4_1's
/// offset meets a sum rounded to f16, plus room for f32 rounding.
fn reference(qt: &QTensor, x: &[f32], rows: usize, block: usize) -> (Vec<f64>, Vec<f64>) {
    let w = qt
        .dequantize(&Device::Cpu)
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    let k = w[0].len();
    let mut y = Vec::new();
    let mut bound = Vec::new();
    for r in 0..rows {
        let xr = &x[r * k..(r + 1) * k];
        let steps: Vec<f64> = xr
            .chunks(block)
            .map(|b| b.iter().fold(0f32, |m, v| m.max(v.abs())) as f64 / 127.0)
            .collect();
        for wc in &w {
            let mut s = 0f64;
            let (mut quant, mut mag) = (0f64, 0f64);
            for i in 0..k {
                s += wc[i] as f64 * xr[i] as f64;
                quant += (wc[i] as f64).abs() * steps[i / block] * (0.5 + 127.0 / 2048.0);
                mag += (wc[i] as f64 * xr[i] as f64).abs();
            }
            for (wb, xb) in wc.chunks(32).zip(xr.chunks(32)) {
                let wmax = wb.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
                let xsum = xb.iter().map(|v| v.abs() as f64).sum::<f64>();
                quant += wmax * xsum / 1024.0;
            }
            y.push(s);
            bound.push(quant * 1.001 + mag * 2e-5 + 1e-6);
        }
    }
    (y, bound)
}

const TYPES: [(GgmlDType, usize); 6] = [
    (GgmlDType::Q4_0, 32),
    (GgmlDType::Q4_1, 32),
    (GgmlDType::Q5_0, 32),
    (GgmlDType::Q8_0, 32),
    (GgmlDType::Q4K, 256),
    (GgmlDType::Q6K, 256),
];

fn ks(block: usize) -> Vec<usize> {
    if block == 32 {
        vec![32, 64, 96, 576, 640, 2048]
    } else {
        vec![256, 512, 1536, 2048]
    }
}

#[test]
fn kernels_match_the_f64_reference_within_the_quantization_bound() {
    let mut rng = Rng(0x9E3779B97F4A7C15);
    for (dtype, block) in TYPES {
        for k in ks(block) {
            for out in [1usize, 7, 33, 130] {
                let qt = weights(dtype, out, k, &mut rng);
                let lin = QLinear::from_arc(qt.clone()).unwrap();
                assert!(lin.is_native(), "{dtype:?} should use our kernels");
                for rows in [1usize, 3, 17] {
                    let x = rng.vec(rows * k);
                    let (want, bound) = reference(&qt, &x, rows, block);
                    for isa in Isa::all() {
                        let got = lin.forward_rows_with(isa, &x, rows).unwrap();
                        assert_eq!(got.len(), want.len());
                        for i in 0..got.len() {
                            let err = (got[i] as f64 - want[i]).abs();
                            assert!(
                                err <= bound[i],
                                "{dtype:?} {isa:?} k={k} out={out} rows={rows} [{i}]: \
                                 got {} want {} (err {err:.3e} > bound {:.3e})",
                                got[i],
                                want[i],
                                bound[i]
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn kernels_agree_with_candles_qmatmul() {
    let mut rng = Rng(12345);
    // The 32-element formats only: the k-quants' activations have a step per 32 here and one
    // per 256 in candle (ggml's Q8_K), so they are checked against the exact product instead
    // (`kquant_activations_are_closer_to_exact_than_candles`).
    for (dtype, block) in TYPES.into_iter().filter(|(_, block)| *block == 32) {
        let mut worst = 0f64;
        for k in ks(block) {
            let (out, rows) = (65, 5);
            let qt = weights(dtype, out, k, &mut rng);
            let lin = QLinear::from_arc(qt.clone()).unwrap();
            let x = rng.vec(rows * k);
            let xt = Tensor::from_slice(&x, (rows, k), &Device::Cpu).unwrap();
            let theirs = QMatMul::from_arc(qt.clone())
                .unwrap()
                .forward(&xt)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            for isa in Isa::all() {
                let ours = lin.forward_rows_with(isa, &x, rows).unwrap();
                // Relative to the output's magnitude, per row.
                for r in 0..rows {
                    let (o, t) = (&ours[r * out..][..out], &theirs[r * out..][..out]);
                    let norm = t.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
                    let diff = o
                        .iter()
                        .zip(t)
                        .map(|(a, b)| ((a - b) as f64).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    worst = worst.max(diff / norm);
                }
            }
        }
        eprintln!("{dtype:?}: worst relative difference from candle {worst:.2e}");
        // Same activation quantizer as candle (f16 scales); but for Q8_1's sum, which ggml
        // (and we) round as f16(d · Σq) and candle as f16(Σq) · d in f16, off by an f16 ulp,
        // which Q4_1's offset `m · s` carries into the output.
        let tol = match dtype {
            GgmlDType::Q4_1 => 5e-3,
            _ => 1e-3,
        };
        assert!(worst <= tol, "{dtype:?}: {worst:.2e} > {tol:.0e}");
    }
}

/// Squared distance of `got` from the f64 `want`, summed.
fn squared_error(got: &[f32], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| (*g as f64 - w).powi(2))
        .sum()
}

#[test]
fn kquant_activations_are_closer_to_exact_than_candles() {
    let mut rng = Rng(4242);
    for (dtype, block) in TYPES.into_iter().filter(|(_, block)| *block == 256) {
        let (mut ours, mut theirs) = (0f64, 0f64);
        for k in ks(block) {
            let (out, rows) = (65, 5);
            let qt = weights(dtype, out, k, &mut rng);
            let lin = QLinear::from_arc(qt.clone()).unwrap();
            // Sub-blocks of very different magnitudes, as activations have (a step per 256
            // then leaves the small ones few levels).
            let x: Vec<f32> = rng
                .vec(rows * k)
                .iter()
                .enumerate()
                .map(|(i, v)| v * [1.0, 0.05, 0.3, 0.01][i / 32 % 4])
                .collect();
            let (want, _) = reference(&qt, &x, rows, block);
            let xt = Tensor::from_slice(&x, (rows, k), &Device::Cpu).unwrap();
            let candle = QMatMul::from_arc(qt.clone()).unwrap().forward(&xt).unwrap();
            theirs += squared_error(&candle.flatten_all().unwrap().to_vec1().unwrap(), &want);
            for isa in Isa::all() {
                ours += squared_error(&lin.forward_rows_with(isa, &x, rows).unwrap(), &want);
            }
        }
        let ratio = (ours / Isa::all().len() as f64 / theirs).sqrt();
        eprintln!("{dtype:?}: error from exact {ratio:.3} of candle's");
        assert!(ratio < 0.5, "{dtype:?}: {ratio:.3}");
    }
}

#[test]
fn a_row_gives_the_same_bits_alone_or_in_a_batch() {
    let mut rng = Rng(777);
    for (dtype, block) in TYPES {
        let k = if block == 32 { 576 } else { 512 };
        let out = 97;
        let qt = weights(dtype, out, k, &mut rng);
        let lin = QLinear::from_arc(qt).unwrap();
        let rows = 17;
        let x = rng.vec(rows * k);
        for isa in Isa::all() {
            let all = lin.forward_rows_with(isa, &x, rows).unwrap();
            for r in 0..rows {
                let one = lin
                    .forward_rows_with(isa, &x[r * k..(r + 1) * k], 1)
                    .unwrap();
                assert!(
                    one.iter()
                        .zip(&all[r * out..(r + 1) * out])
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{dtype:?} {isa:?}: row {r} differs alone and in a batch"
                );
            }
            // And in a batch of a different size.
            let part = lin.forward_rows_with(isa, &x[3 * k..10 * k], 7).unwrap();
            assert!(part
                .iter()
                .zip(&all[3 * out..10 * out])
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }
}

/// A model's passes reuse their buffers (`PassScratch`): the output a kernel writes into
/// memory full of NaNs from an earlier pass is the same bits as into fresh memory, for every
/// format, path and tile size (17 rows: tiles of eight or four and single rows), and for two
/// matrices sharing one quantized input.
#[test]
fn reused_buffers_never_show_through_the_results() {
    let mut rng = Rng(4242);
    for (dtype, block) in TYPES {
        let k = if block == 32 { 576 } else { 512 };
        let (out, rows) = (97, 17);
        let lin = QLinear::from_arc(weights(dtype, out, k, &mut rng)).unwrap();
        let other = QLinear::from_arc(weights(dtype, 40, k, &mut rng)).unwrap();
        let x = rng.vec(rows * k);
        for isa in Isa::all() {
            let fresh = lin.forward_rows_with(isa, &x, rows).unwrap();
            let scratch = PassScratch::default();
            // Poisoned buffers, larger than any request below, left free in the pools.
            drop(scratch.floats.adopt(vec![f32::NAN; 4 * rows * out]));
            drop(scratch.floats.adopt(vec![f32::NAN; 4 * rows * out]));
            let reused = lin.forward_rows_in(&scratch, isa, &x, rows).unwrap();
            let same = |a: &[f32], b: &[f32]| {
                a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits())
            };
            assert!(same(&fresh, &reused), "{dtype:?} {isa:?}: one matrix");
            drop(reused);
            let both = forward_group_in(&scratch, isa, &[&lin, &other], &x, rows).unwrap();
            assert!(same(&fresh, &both[0]), "{dtype:?} {isa:?}: in a group");
            let alone = other.forward_rows_with(isa, &x, rows).unwrap();
            assert!(
                same(&alone, &both[1]),
                "{dtype:?} {isa:?}: the group's second"
            );
        }
    }
}

#[test]
fn other_formats_fall_back_to_candle_unchanged() {
    let mut rng = Rng(4242);
    // Q5_K too where its sixteen-row layout does not run (it has no ggml-layout kernel).
    let q5k = Isa::best().packed_layout(Format::Q5K).is_none();
    let dtypes = [GgmlDType::F32, GgmlDType::F16, GgmlDType::Q5_1];
    for dtype in dtypes.into_iter().chain(q5k.then_some(GgmlDType::Q5K)) {
        let k = 256;
        let qt = weights(dtype, 9, k, &mut rng);
        let lin = QLinear::from_arc(qt.clone()).unwrap();
        assert!(!lin.is_native(), "{dtype:?} should fall back");
        let xt = Tensor::from_vec(rng.vec(3 * k), (3, k), &Device::Cpu).unwrap();
        let ours = lin.forward(&xt).unwrap().to_vec2::<f32>().unwrap();
        let theirs = QMatMul::from_arc(qt)
            .unwrap()
            .forward(&xt)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        assert_eq!(ours, theirs, "{dtype:?}");
    }
    // A 32-block format whose rows are not whole k-quant blocks is not a problem; a k-quant
    // with an odd width cannot be built, so nothing else to check here.
}

#[test]
fn q5k_runs_on_our_kernels_exactly_where_its_repacked_layout_does() {
    let mut rng = Rng(0x5851F42D4C957F2D);
    let native = Isa::best().packed_layout(Format::Q5K).is_some();
    for k in ks(256) {
        for out in [1usize, 7, 33] {
            let qt = weights(GgmlDType::Q5K, out, k, &mut rng);
            let lin = QLinear::from_arc(qt.clone()).unwrap();
            assert_eq!(lin.is_native(), native, "Q5_K k={k} out={out}");
            if !native {
                continue;
            }
            // Every path computes the repacked layout (the ones without kernels for it by
            // its plain reference), within the quantization bound of the exact product.
            for rows in [1usize, 3, 17] {
                let x = rng.vec(rows * k);
                let (want, bound) = reference(&qt, &x, rows, 256);
                for isa in Isa::all() {
                    let got = lin.forward_rows_with(isa, &x, rows).unwrap();
                    for i in 0..got.len() {
                        let err = (got[i] as f64 - want[i]).abs();
                        assert!(
                            err <= bound[i],
                            "Q5_K {isa:?} k={k} out={out} rows={rows} [{i}]: got {} want {}",
                            got[i],
                            want[i]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn tensor_wrapper_matches_the_vec_api() {
    let mut rng = Rng(99);
    let k = 640;
    let qt = weights(GgmlDType::Q5_0, 33, k, &mut rng);
    let lin = QLinear::from_arc(qt).unwrap();
    let x = rng.vec(4 * k);
    let xt = Tensor::from_slice(&x, (4, k), &Device::Cpu).unwrap();
    let y = lin.forward(&xt).unwrap();
    assert_eq!(y.dims(), &[4, 33]);
    let flat = y.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    assert_eq!(flat, lin.forward_rows(&x, 4).unwrap());
    // Leading batch dimensions are kept.
    let y3 = lin.forward(&xt.reshape((2, 2, k)).unwrap()).unwrap();
    assert_eq!(y3.dims(), &[2, 2, 33]);
    assert!(lin
        .forward(&Tensor::zeros((2, 7), candle_core::DType::F32, &Device::Cpu).unwrap())
        .is_err());
}

#[test]
#[cfg(target_arch = "x86_64")]
fn vnni_kquants_give_the_same_bits_as_avx2_through_qlinear() {
    let all = Isa::all();
    let (Some(avx2), Some(vnni)) = (
        all.iter().find(|i| matches!(i, Isa::Avx2(_))),
        all.iter().find(|i| matches!(i, Isa::Vnni(_))),
    ) else {
        eprintln!("skipped: this CPU lacks AVX2 or AVX-512 VNNI");
        return;
    };
    let mut rng = Rng(31337);
    // Only the k-quants: the 32-element formats sum floats in another order.
    for (dtype, block) in TYPES.into_iter().filter(|(_, b)| *b == 256) {
        for k in ks(block) {
            let out = 37;
            let qt = weights(dtype, out, k, &mut rng);
            let lin = QLinear::from_arc(qt).unwrap();
            // 1, 4 and 4 + 3 rows: the one-row and four-row kernels, and both in one call.
            for rows in [1usize, 4, 7] {
                let x = rng.vec(rows * k);
                let a = lin.forward_rows_with(*avx2, &x, rows).unwrap();
                let v = lin.forward_rows_with(*vnni, &x, rows).unwrap();
                for (i, (a, v)) in a.iter().zip(&v).enumerate() {
                    assert_eq!(
                        a.to_bits(),
                        v.to_bits(),
                        "{dtype:?} k={k} rows={rows} [{i}]: AVX2 {a} VNNI {v}"
                    );
                }
            }
        }
    }
}

#[test]
#[cfg(target_arch = "aarch64")]
fn neon_kernels_give_the_scalar_kernels_bits_through_qlinear() {
    let mut rng = Rng(4711);
    let neon: Vec<Isa> = Isa::all()
        .into_iter()
        .filter(|i| matches!(i, Isa::Neon(_)))
        .collect();
    for (dtype, block) in TYPES {
        for k in ks(block) {
            let out = 37;
            let qt = weights(dtype, out, k, &mut rng);
            let lin = QLinear::from_arc(qt).unwrap();
            // 1, 4 and 4 + 3 rows: the one-row and four-row kernels, and both in one call.
            for rows in [1usize, 4, 7] {
                let x = rng.vec(rows * k);
                let want = lin.forward_rows_with(Isa::Scalar, &x, rows).unwrap();
                for isa in &neon {
                    let got = lin.forward_rows_with(*isa, &x, rows).unwrap();
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g.to_bits(),
                            w.to_bits(),
                            "{dtype:?} {isa:?} k={k} rows={rows} [{i}]: {g} scalar {w}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_group_of_layers_gives_the_same_bits_as_each_layer_alone() {
    use taper::engine::model::linear::forward_rows_group;
    let mut rng = Rng(0x5EED_6001);
    let k = 256;
    // Same activation format (a shared quantization), mixed formats (one by one), a layer
    // candle computes, and a layer with no outputs.
    let groups: [&[(GgmlDType, usize)]; 4] = [
        &[
            (GgmlDType::Q5_0, 40),
            (GgmlDType::Q4_1, 7),
            (GgmlDType::Q8_0, 33),
        ],
        &[(GgmlDType::Q4K, 12), (GgmlDType::Q4_0, 9)],
        &[(GgmlDType::Q6K, 5), (GgmlDType::F16, 6)],
        &[(GgmlDType::Q8_0, 0), (GgmlDType::Q8_0, 3)],
    ];
    for group in groups {
        let layers: Vec<QLinear> = group
            .iter()
            .map(|&(dtype, out)| QLinear::from_arc(weights(dtype, out, k, &mut rng)).unwrap())
            .collect();
        let refs: Vec<&QLinear> = layers.iter().collect();
        for rows in [1, 5, 9] {
            let x = rng.vec(rows * k);
            let together = forward_rows_group(&refs, &x, rows).unwrap();
            assert_eq!(together.len(), layers.len());
            for ((layer, got), &(dtype, _)) in layers.iter().zip(&together).zip(group) {
                let alone = layer.forward_rows(&x, rows).unwrap();
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(got), bits(&alone), "{dtype:?}, {rows} rows");
            }
        }
    }
    let one = QLinear::from_arc(weights(GgmlDType::Q8_0, 4, k, &mut rng)).unwrap();
    assert!(forward_rows_group(&[&one], &[0.0; 10], 1).is_err());
}
