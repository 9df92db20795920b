//! The repacked layouts against ggml's and their own plain references on every path, and the
//! format table against ggml's block sizes and the paths that repack.

use super::*;
use crate::engine::model::kernels::packed::q8_0_x16;

/// Each of a format's repacked layouts against ggml's (close) and against its own plain
/// reference (bit for bit) on every implementation that runs it: batched or alone, a row moved
/// to another lane, a later chunk.
fn check_repacked(format: Format, widths: &[usize], rng: &mut Rng) {
    assert!(
        !format.spec().packed.is_empty(),
        "{format:?}: a repacked layout"
    );
    for &(packed_kind, repack_into) in format.spec().packed {
        check_repacked_into(format, packed_kind, repack_into, widths, rng);
    }
}

fn check_repacked_into(
    format: Format,
    packed_kind: Layout,
    repack_into: packed::Repack,
    widths: &[usize],
    rng: &mut Rng,
) {
    let repack = |w: &[u8], rows: usize| {
        let blocks = w.len() / rows / format.spec().block_bytes;
        let mut out = vec![0; rows.next_multiple_of(16) * blocks * packed_kind.block_bytes()];
        repack_into(w, rows, &mut out);
        out
    };
    for &nb in widths {
        for extreme in [false, true] {
            // 37 rows: two whole groups of 16 and a padded one.
            let rows = 37;
            let w = weights(format, rows, nb, rng);
            let packed = repack(&w, rows);
            let acts: [Acts; 4] = std::array::from_fn(|_| activations(format, nb, extreme, rng));
            let refs: [&Acts; 4] = std::array::from_fn(|r| &acts[r]);
            let ggml = match format.spec().ggml {
                Some(kind) => run::<4>(Isa::Scalar, kind, &w, &refs, rows),
                None => dequantized_products(format, &w, rows, &refs),
            };
            let want = run::<4>(Isa::Scalar, packed_kind, &packed, &refs, rows);
            let rms = (ggml
                .iter()
                .flatten()
                .map(|v| (*v as f64).powi(2))
                .sum::<f64>()
                / (4 * rows) as f64)
                .sqrt();
            for (c, (g, x)) in ggml.iter().zip(&want).enumerate() {
                for r in 0..4 {
                    let err = (g[r] as f64 - x[r] as f64).abs();
                    assert!(
                        err <= 1e-5 * rms + 1e-30,
                        "{format:?} [{c}][{r}]: {} vs {}",
                        x[r],
                        g[r]
                    );
                }
            }
            // Without the first row every row moves to another lane; without the first group
            // (a matmul chunk that starts later) the rows keep theirs. Neither changes a bit.
            let row_bytes = w.len() / rows;
            let shifted = repack(&w[row_bytes..], rows - 1);
            let later = &packed[packed.len() / 3..];
            for isa in Isa::all().into_iter().filter(|isa| isa.runs(packed_kind)) {
                let bits = |v: &[[f32; 4]]| -> Vec<[u32; 4]> {
                    v.iter().map(|o| o.map(f32::to_bits)).collect()
                };
                let four = run::<4>(isa, packed_kind, &packed, &refs, rows);
                assert_eq!(bits(&four), bits(&want), "{packed_kind:?} {isa:?} nb={nb}");
                let moved = run::<4>(isa, packed_kind, &shifted, &refs, rows - 1);
                assert_eq!(
                    bits(&moved),
                    bits(&want[1..]),
                    "{isa:?}: a row changed lanes"
                );
                let eight_refs: [&Acts; 8] = std::array::from_fn(|r| refs[r % 4]);
                let eight = run::<8>(isa, packed_kind, &packed, &eight_refs, rows);
                let eight: Vec<[u32; 4]> = eight
                    .iter()
                    .map(|o| std::array::from_fn(|r| o[r + 4].to_bits()))
                    .collect();
                assert_eq!(eight, bits(&want), "{isa:?}: eight rows at a time");
                let chunk = run::<4>(isa, packed_kind, later, &refs, rows - 16);
                assert_eq!(bits(&chunk), bits(&want[16..]), "{isa:?}: a later chunk");
                // Two at a time (a verify pass of two tokens), as in four.
                for pair in [[0, 1], [2, 3]] {
                    let two = run::<2>(isa, packed_kind, &packed, &pair.map(|r| refs[r]), rows);
                    for (i, &r) in pair.iter().enumerate() {
                        let paired: Vec<u32> = two.iter().map(|o| o[i].to_bits()).collect();
                        let batched: Vec<u32> = want.iter().map(|o| o[r].to_bits()).collect();
                        assert_eq!(paired, batched, "{isa:?} row {r} in two and in four");
                    }
                }
                for (r, a) in refs.iter().enumerate() {
                    let one = run::<1>(isa, packed_kind, &packed, &[a], rows);
                    let alone: Vec<u32> = one.iter().map(|o| o[0].to_bits()).collect();
                    let batched: Vec<u32> = want.iter().map(|o| o[r].to_bits()).collect();
                    assert_eq!(alone, batched, "{isa:?} row {r} alone and in four");
                }
            }
        }
    }
}

#[test]
fn q4k_x16_is_q4k_repacked_and_bit_exact_on_every_isa() {
    let mut rng = Rng(0x9E3779B97F4A7C15);
    check_repacked(Format::Q4K, &[1, 3], &mut rng);
}

/// `out[c][r]` for a format with no kernel in ggml's layout: candle's dequantized weights
/// times the exact values of the activations, in f64.
fn dequantized_products(format: Format, w: &[u8], rows: usize, acts: &[&Acts; 4]) -> Vec<[f32; 4]> {
    use candle_core::quantized::QTensor;
    let row_bytes = w.len() / rows;
    let nb = row_bytes / format.spec().block_bytes;
    let k = nb * format.spec().block_elems;
    let values = |a: &Acts| -> Vec<f64> {
        match a {
            Acts::K(blocks) => blocks
                .iter()
                .flat_map(|b| {
                    (0..QK_K).map(move |e| b.qs[e] as f64 * b.d as f64 * b.mult[e / 32] as f64)
                })
                .collect(),
            Acts::Q8(blocks) => blocks
                .iter()
                .flat_map(|b| b.qs.iter().map(move |&q| q as f64 * b.d as f64))
                .collect(),
        }
    };
    let y: Vec<Vec<f64>> = acts.iter().map(|a| values(a)).collect();
    (0..rows)
        .map(|c| {
            let raw = &w[c * row_bytes..(c + 1) * row_bytes];
            let storage = crate::engine::model::weights::qstorage(raw, format.spec().dtype)
                .expect("candle stores the format");
            let x = QTensor::new(storage, (k,))
                .and_then(|t| t.dequantize(&candle_core::Device::Cpu))
                .and_then(|t| t.to_vec1::<f32>())
                .expect("candle dequantizes");
            std::array::from_fn(|r| {
                x.iter()
                    .zip(&y[r])
                    .map(|(&a, &b)| a as f64 * b)
                    .sum::<f64>() as f32
            })
        })
        .collect()
}

#[test]
fn q5k_x16_is_q5k_repacked_and_bit_exact_on_every_isa() {
    let mut rng = Rng(0x3C6EF372FE94F82B);
    check_repacked(Format::Q5K, &[1, 3], &mut rng);
}

#[test]
fn q6k_x16_is_q6k_repacked_and_bit_exact_on_every_isa() {
    let mut rng = Rng(0x853C49E6748FEA9B);
    check_repacked(Format::Q6K, &[1, 3], &mut rng);
}

#[test]
fn q5_0_x16_is_q5_0_repacked_and_bit_exact_on_every_isa() {
    let mut rng = Rng(0xD1B54A32D192ED03);
    check_repacked(Format::Q5_0, &[1, 2, 5], &mut rng);
}

#[test]
fn q8_0_x16_is_q8_0_repacked_and_bit_exact_on_every_isa() {
    let mut rng = Rng(0xBF58476D1CE4E5B9);
    check_repacked(Format::Q8_0, &[1, 2, 5], &mut rng);
}

#[test]
fn a_q8_0_x16_row_dequantizes_to_ggml_s_values_bit_for_bit() {
    use candle_core::quantized::{GgmlDType, QTensor};
    let mut rng = Rng(0x2545F4914F6CDD1D);
    let (rows, nb) = (37, 3);
    let w = weights(Format::Q8_0, rows, nb, &mut rng);
    let mut packed = vec![0; rows.next_multiple_of(16) * nb * 34];
    q8_0_x16::repack_into(&w, rows, &mut packed);
    for row in 0..rows {
        let raw = &w[row * nb * 34..(row + 1) * nb * 34];
        let storage = crate::engine::model::weights::qstorage(raw, GgmlDType::Q8_0).expect("q8_0");
        let want = QTensor::new(storage, (nb * QK,))
            .and_then(|t| t.dequantize(&candle_core::Device::Cpu))
            .and_then(|t| t.to_vec1::<f32>())
            .expect("candle dequantizes");
        let mut got = Vec::new();
        q8_0_x16::dequantize_row(&packed, nb, row, &mut got);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "row {row}");
    }
}

#[test]
fn q4_1_x16_is_q4_1_repacked_and_bit_exact_on_every_isa() {
    let mut rng = Rng(0x94D049BB133111EB);
    check_repacked(Format::Q4_1, &[1, 2, 5], &mut rng);
}

#[test]
fn the_format_table_agrees_with_ggml_and_its_layouts() {
    for spec in &FORMATS {
        let f = spec.format;
        assert_eq!(Format::from_dtype(spec.dtype), Some(f));
        assert_eq!(spec.block_elems, spec.dtype.block_size(), "{f:?}");
        assert_eq!(spec.block_bytes, spec.dtype.type_size(), "{f:?}");
        assert!(
            spec.ggml.is_some() || !spec.packed.is_empty(),
            "{f:?} has a kernel somewhere"
        );
        for layout in spec
            .ggml
            .into_iter()
            .chain(spec.packed.iter().map(|&(l, _)| l))
        {
            assert_eq!(layout.format(), f, "{layout:?} holds {f:?}");
            assert_eq!(layout.uses_q8k(), uses_q8k(f), "{f:?}: its activations");
            assert_eq!(layout.block_elems(), spec.block_elems);
        }
        if let Some(ggml) = spec.ggml {
            assert!(
                !ggml.is_packed(),
                "{f:?}: ggml's layout is one row at a time"
            );
        }
        for &(packed, _) in spec.packed {
            assert!(packed.is_packed());
        }
    }
}

#[test]
fn only_the_paths_with_kernels_for_them_repack() {
    for isa in Isa::all() {
        for spec in &FORMATS {
            // x86's SIMD paths repack: AVX-512 into a k-quant's compact form, the others into
            // a format's first layout.
            let compact = match isa {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2(_) | Isa::AvxVnni(_) => Some(false),
                #[cfg(target_arch = "x86_64")]
                Isa::Vnni(_) => Some(true),
                _ => None,
            };
            let want = compact.and_then(|compact| {
                let mut layouts = spec.packed.iter().map(|&(l, _)| l);
                let compact_one = layouts.clone().find(|l| compact && l.has_compact_scales());
                compact_one.or_else(|| layouts.next())
            });
            assert_eq!(
                isa.packed_layout(spec.format).map(|(l, _)| l),
                want,
                "{isa:?} {:?}",
                spec.format
            );
        }
    }
}
