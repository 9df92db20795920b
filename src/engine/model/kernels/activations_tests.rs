//! The activation quantizers against plain per-element references written with `f32::max`,
//! `clamp` and `round_ties_even`: the vectorised forms must give the same bits, ties included.

use super::activations::{round_to_f16, MAX_MULT};
use super::test_rng::Rng;
use super::*;

/// Random rows with outliers, an all-zero block, and a block whose step is exactly 1 so that
/// every other value is a tie (k + ½).
fn rows(len: usize, rng: &mut Rng) -> Vec<f32> {
    let mut x: Vec<f32> = (0..len).map(|_| rng.activation()).collect();
    x[..32].fill(0.0);
    for (i, v) in x[32..64].iter_mut().enumerate() {
        *v = if i == 0 {
            127.0
        } else {
            (i as f32 - 16.0) + 0.5 * (i % 2) as f32
        };
    }
    x
}

fn reference_q8(x: &[f32; QK]) -> ([i8; QK], f32, f32) {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d > 0.0 { 1.0 / d } else { 0.0 };
    let qs = x.map(|v| (v * id).round_ties_even().clamp(-127.0, 127.0) as i8);
    let sum: i32 = qs.iter().map(|&q| i32::from(q)).sum();
    (qs, round_to_f16(d), round_to_f16(d * sum as f32))
}

#[test]
fn quantize_q8_is_the_plain_reference_bit_for_bit() {
    let mut rng = Rng(0x8CB92BA72F3D8DD7);
    let x = rows(32 * 40, &mut rng);
    let mut got = vec![Q8Block::default(); 40];
    quantize_q8(&x, &mut got);
    for (i, (xb, b)) in x.as_chunks::<QK>().0.iter().zip(&got).enumerate() {
        let (qs, d, s) = reference_q8(xb);
        assert_eq!(b.qs, qs, "block {i}");
        assert_eq!(
            (b.d.to_bits(), b.s.to_bits()),
            (d.to_bits(), s.to_bits()),
            "block {i}"
        );
    }
}

#[test]
fn a_nan_in_a_block_is_skipped_by_the_maximum_and_quantized_to_zero_as_by_the_reference() {
    let mut rng = Rng(0x2545F4914F6CDD1D);
    let mut x = rows(32 * 3, &mut rng);
    x[70] = f32::NAN;
    x[71] = -f32::NAN;
    let mut got = vec![Q8Block::default(); 3];
    quantize_q8(&x, &mut got);
    let (qs, d, s) = reference_q8(x[64..96].try_into().expect("a block"));
    assert_eq!((got[2].qs[6], got[2].qs[7]), (0, 0));
    assert_eq!(got[2].qs, qs);
    assert_eq!(
        (got[2].d.to_bits(), got[2].s.to_bits()),
        (d.to_bits(), s.to_bits())
    );
}

#[test]
fn quantize_q8k_is_the_plain_reference_bit_for_bit() {
    let mut rng = Rng(0x5851F42D4C957F2D);
    let x = rows(QK_K * 6, &mut rng);
    let mut got = vec![Q8KBlock::default(); 6];
    quantize_q8k(&x, &mut got);
    for (i, (xb, b)) in x.as_chunks::<QK_K>().0.iter().zip(&got).enumerate() {
        let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
        if amax == 0.0 {
            assert_eq!(b.qs, [0; QK_K], "block {i}");
            continue;
        }
        let step = amax / (127.0 * MAX_MULT as f32);
        assert_eq!(b.d.to_bits(), step.to_bits(), "block {i}");
        for (j, sub) in xb.as_chunks::<32>().0.iter().enumerate() {
            let sub_amax = sub.iter().fold(0f32, |m, v| m.max(v.abs()));
            let mult = (sub_amax / amax * MAX_MULT as f32)
                .ceil()
                .clamp(1.0, MAX_MULT as f32);
            assert_eq!(b.mult[j], mult as i16, "block {i} sub-block {j}");
            let inv = 1.0 / (step * mult);
            for (l, &v) in sub.iter().enumerate() {
                let q = (v * inv).round_ties_even().clamp(-127.0, 127.0) as i8;
                assert_eq!(b.qs[32 * j + l], q, "block {i} value {}", 32 * j + l);
            }
        }
        for (k, s) in b.bsums.iter().enumerate() {
            let want: i16 = b.qs[16 * k..16 * k + 16]
                .iter()
                .map(|&q| i16::from(q))
                .sum();
            assert_eq!(*s, want, "block {i} sum {k}");
        }
    }
}
