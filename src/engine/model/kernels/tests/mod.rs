//! Every kernel this CPU runs against the scalar ones on random raw blocks (extreme quants
//! included), 1 and 4 rows at a time; the AVX-512 VNNI k-quant kernels bit for bit against
//! AVX2's; every NEON level bit for bit against the scalar kernels. The repacked layouts'
//! tests are in [`repacked`]; the random weights and activations both use are here.

mod repacked;

use super::format::FORMATS;
use super::test_rng::Rng;
use super::*;

/// Where a block of ggml's layout keeps its f16 scales.
fn f16_fields(format: Format) -> &'static [usize] {
    match format {
        Format::Q4_1 | Format::Q4K | Format::Q5K => &[0, 2],
        Format::Q6K => &[208],
        Format::Q4_0 | Format::Q5_0 | Format::Q8_0 => &[0],
    }
}

/// Whether `format`'s kernels take k-quant activations.
fn uses_q8k(format: Format) -> bool {
    format.spec().block_elems == QK_K
}

/// `rows` weight rows of `nb` ggml blocks: random bytes (so every quant and packed scale
/// value occurs, Q8_0's -128 included) with valid f16 scales.
fn weights(format: Format, rows: usize, nb: usize, rng: &mut Rng) -> Vec<u8> {
    let block_bytes = format.spec().block_bytes;
    let mut w: Vec<u8> = (0..rows * nb * block_bytes)
        .map(|_| rng.u64() as u8)
        .collect();
    for b in w.chunks_exact_mut(block_bytes) {
        for &at in f16_fields(format) {
            b[at..at + 2].copy_from_slice(&rng.f16());
        }
    }
    w
}

/// A row of activations: usually random values quantized as the engine does, sometimes the
/// extreme quants (every one ±127 for Q8, -128 for Q8_K).
fn activations(format: Format, nb: usize, extreme: bool, rng: &mut Rng) -> Acts {
    let x: Vec<f32> = (0..nb * format.spec().block_elems)
        .map(|_| rng.activation())
        .collect();
    if uses_q8k(format) {
        let mut a = vec![Q8KBlock::default(); nb];
        quantize_q8k(&x, &mut a);
        if extreme {
            for b in &mut a {
                // The largest step multipliers, so the scaled sums reach i16's limit.
                (0..QK_K / 32).for_each(|j| b.set_mult(j, MAX_MULT));
                b.qs = [-128; QK_K];
                b.bsums = [-128 * 16; QK_K / 16];
                b.set_scaled_sums();
            }
        }
        Acts::K(a)
    } else {
        let mut a = vec![Q8Block::default(); nb];
        quantize_q8(&x, &mut a);
        if extreme {
            for (i, b) in a.iter_mut().enumerate() {
                b.qs = [if i % 2 == 0 { 127 } else { -127 }; QK];
            }
        }
        Acts::Q8(a)
    }
}

enum Acts {
    Q8(Vec<Q8Block>),
    K(Vec<Q8KBlock>),
}

/// `out[c][r]` for `R` activation rows.
fn run<const R: usize>(
    isa: Isa,
    kind: Layout,
    w: &[u8],
    acts: &[&Acts; R],
    cols: usize,
) -> Vec<[f32; R]> {
    let mut out = vec![[0f32; R]; cols];
    match kind {
        Layout::Q8(kind) => {
            let a: [&[Q8Block]; R] = std::array::from_fn(|r| match acts[r] {
                Acts::Q8(v) => v.as_slice(),
                Acts::K(_) => unreachable!("one kind of activations per test"),
            });
            dot_q8(isa, kind, w, &a, &mut out);
        }
        Layout::Q8K(kind) => {
            let a: [&[Q8KBlock]; R] = std::array::from_fn(|r| match acts[r] {
                Acts::K(v) => v.as_slice(),
                Acts::Q8(_) => unreachable!("one kind of activations per test"),
            });
            dot_q8k(isa, kind, w, &a, &mut out);
        }
    }
    out
}

/// For each kind and width: every implementation's results, rows computed four at a time and
/// one at a time (which must agree bit for bit), as `[isa][column][row]`.
fn all_results(f: impl Fn(Layout, &[Isa], &[Vec<[f32; 4]>])) {
    let mut rng = Rng(0x2545F4914F6CDD1D);
    let isas = Isa::all();
    for (format, kind) in FORMATS.iter().filter_map(|s| Some((s.format, s.ggml?))) {
        let widths: &[usize] = if kind.uses_q8k() {
            &[1, 2, 3]
        } else {
            &[1, 2, 3, 5, 8, 20]
        };
        for &nb in widths {
            for extreme in [false, true] {
                let cols = 9;
                let w = weights(format, cols, nb, &mut rng);
                let acts: [Acts; 4] =
                    std::array::from_fn(|_| activations(format, nb, extreme, &mut rng));
                let refs: [&Acts; 4] = std::array::from_fn(|r| &acts[r]);
                let results: Vec<Vec<[f32; 4]>> = isas
                    .iter()
                    .map(|&isa| {
                        let four = run::<4>(isa, kind, &w, &refs, cols);
                        // Without the first weight row, every column moves within the kernels'
                        // tiles of weight rows; its result must not change.
                        let row_bytes = w.len() / cols;
                        let shifted = run::<4>(isa, kind, &w[row_bytes..], &refs, cols - 1);
                        for (c, col) in shifted.iter().enumerate() {
                            for r in 0..4 {
                                assert_eq!(
                                    col[r].to_bits(),
                                    four[c + 1][r].to_bits(),
                                    "{kind:?} {isa:?} nb={nb}: column {} changed with its \
                                     position among the weight rows",
                                    c + 1
                                );
                            }
                        }
                        // Eight rows at a time (the four, shifted and repeated) give the
                        // same bits as four.
                        let eight_refs: [&Acts; 8] = std::array::from_fn(|r| refs[(r + 1) % 4]);
                        let eight = run::<8>(isa, kind, &w, &eight_refs, cols);
                        for (c, (e, f)) in eight.iter().zip(&four).enumerate() {
                            for r in 0..8 {
                                assert_eq!(
                                    e[r].to_bits(),
                                    f[(r + 1) % 4].to_bits(),
                                    "{kind:?} {isa:?} nb={nb}: row {r} column {c} differs in \
                                     eight and in four"
                                );
                            }
                        }
                        for (r, a) in refs.iter().enumerate() {
                            let one = run::<1>(isa, kind, &w, &[a], cols);
                            for c in 0..cols {
                                assert_eq!(
                                    one[c][0].to_bits(),
                                    four[c][r].to_bits(),
                                    "{kind:?} {isa:?} nb={nb}: row {r} column {c} differs \
                                     alone ({}) and in four ({})",
                                    one[c][0],
                                    four[c][r]
                                );
                            }
                        }
                        four
                    })
                    .collect();
                f(kind, &isas, &results);
            }
        }
    }
}

#[test]
fn every_kernel_matches_the_scalar_one_and_is_batch_invariant() {
    all_results(|kind, isas, results| {
        let want = &results[0];
        assert!(matches!(isas[0], Isa::Scalar));
        // Integer sums are exact everywhere; only the float accumulation order differs.
        let rms = (want
            .iter()
            .flatten()
            .map(|v| (*v as f64).powi(2))
            .sum::<f64>()
            / (4 * want.len()) as f64)
            .sqrt();
        for (isa, got) in isas.iter().zip(results).skip(1) {
            for (c, (g, w)) in got.iter().zip(want).enumerate() {
                for r in 0..4 {
                    let err = (g[r] as f64 - w[r] as f64).abs();
                    assert!(
                        err <= 1e-5 * rms + 1e-30,
                        "{kind:?} {isa:?} [{c}][{r}]: {} vs scalar {} (rms {rms:.3e})",
                        g[r],
                        w[r]
                    );
                }
            }
        }
    });
}

#[test]
fn vnni_kquant_kernels_are_bit_identical_to_avx2() {
    #[cfg(target_arch = "x86_64")]
    {
        if x86::avx512_vnni::Vnni::detect().is_none() {
            eprintln!("skipped: this CPU lacks AVX-512 VNNI");
            return;
        }
        all_results(|kind, isas, results| {
            // The 32-element formats accumulate floats in another order (checked against
            // the scalar kernels above).
            if !kind.uses_q8k() {
                return;
            }
            let at = |f: fn(&Isa) -> bool| isas.iter().position(f).expect("detected above");
            let avx2 = &results[at(|i| matches!(i, Isa::Avx2(_)))];
            let vnni = &results[at(|i| matches!(i, Isa::Vnni(_)))];
            for (c, (a, v)) in avx2.iter().zip(vnni).enumerate() {
                for r in 0..4 {
                    assert_eq!(
                        a[r].to_bits(),
                        v[r].to_bits(),
                        "{kind:?} [{c}][{r}]: AVX2 {} VNNI {}",
                        a[r],
                        v[r]
                    );
                }
            }
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    eprintln!("skipped: not x86_64");
}

#[test]
fn neon_kernels_are_bit_identical_to_the_scalar_ones() {
    #[cfg(target_arch = "aarch64")]
    all_results(|kind, isas, results| {
        // They sum each block's integers exactly and then do the scalar float steps in order.
        for (isa, got) in isas.iter().zip(results).skip(1) {
            assert!(matches!(isa, Isa::Neon(_)));
            for (c, (g, s)) in got.iter().zip(&results[0]).enumerate() {
                for r in 0..4 {
                    assert_eq!(
                        g[r].to_bits(),
                        s[r].to_bits(),
                        "{kind:?} {isa:?} [{c}][{r}]: {} scalar {}",
                        g[r],
                        s[r]
                    );
                }
            }
        }
    });
    #[cfg(not(target_arch = "aarch64"))]
    eprintln!("skipped: not aarch64");
}

#[test]
fn the_best_isa_is_the_fastest_detected() {
    let all = Isa::all();
    assert!(matches!(all[0], Isa::Scalar));
    // `best` is the last (fastest) of those this CPU has; `best_avx2` never AVX-512 or
    // AVX-VNNI, `best_avx_vnni` never AVX-512.
    assert_eq!(
        std::mem::discriminant(&Isa::best()),
        std::mem::discriminant(all.last().expect("scalar is always there"))
    );
    #[cfg(target_arch = "x86_64")]
    assert!(matches!(Isa::best_avx2(), Isa::Avx2(_) | Isa::Scalar));
    #[cfg(target_arch = "x86_64")]
    assert!(!matches!(Isa::best_avx_vnni(), Isa::Vnni(_)));
}
