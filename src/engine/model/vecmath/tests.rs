//! `vecmath` against plain formulas, and its instruction-set versions against each other.

use super::*;

fn pseudo_random(n: usize, seed: u32, range: f32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            ((x % 20001) as f32 / 10000.0 - 1.0) * range
        })
        .collect()
}

#[test]
fn exp_is_within_a_few_ulp_of_libm() {
    for x in pseudo_random(100_000, 1, 87.0) {
        let (got, want) = (exp_inline(x), x.exp());
        assert!(
            ((got - want) / want).abs() < 4e-7,
            "exp({x}) = {got}, libm {want}"
        );
    }
    assert_eq!(exp_inline(0.0), 1.0);
    assert!(exp_inline(f32::NAN).is_nan());
    assert!(exp_inline(1000.0).is_finite() && exp_inline(-1000.0) >= 0.0);
}

#[test]
fn gelu_and_silu_match_their_formulas() {
    let x = pseudo_random(10_000, 2, 12.0);
    let mut g = x.clone();
    gelu_mul(&mut g, &vec![1.0; x.len()]);
    let mut s = x.clone();
    silu_mul(&mut s, &vec![1.0; x.len()]);
    for ((&v, &gv), &sv) in x.iter().zip(&g).zip(&s) {
        let v64 = v as f64;
        let u = (2.0 / std::f64::consts::PI).sqrt() * (v64 + 0.044715 * v64.powi(3));
        let want_g = 0.5 * v64 * (1.0 + u.tanh());
        let want_s = v64 / (1.0 + (-v64).exp());
        assert!(
            (gv as f64 - want_g).abs() < 1e-5 * (1.0 + want_g.abs()),
            "gelu({v})"
        );
        assert!(
            (sv as f64 - want_s).abs() < 1e-5 * (1.0 + want_s.abs()),
            "silu({v})"
        );
    }
}

#[test]
fn every_instruction_set_gives_the_same_bits() {
    // The dispatching functions must agree with the baseline body exactly.
    let a = pseudo_random(1000, 3, 3.0);
    let b = pseudo_random(1000, 4, 3.0);
    let mut want = 0f32;
    {
        let (ca, ta) = a.as_chunks::<LANES>();
        let (cb, tb) = b.as_chunks::<LANES>();
        let mut acc = [0f32; LANES];
        for (x, y) in ca.iter().zip(cb) {
            for l in 0..LANES {
                acc[l] += x[l] * y[l];
            }
        }
        want += sum_lanes(&acc);
        for (x, y) in ta.iter().zip(tb) {
            want += x * y;
        }
    }
    assert_eq!(dot_inline(&a, &b).to_bits(), want.to_bits());
    let mut g = a.clone();
    gelu_mul(&mut g, &b);
    for ((&x, &y), &got) in a.iter().zip(&b).zip(&g) {
        assert_eq!(got.to_bits(), (gelu_inline(x) * y).to_bits());
    }
}

#[test]
fn norms_adds_and_softcap_match_their_formulas() {
    let x = pseudo_random(48, 8, 4.0);
    let w = pseudo_random(16, 9, 1.0);
    let mut y = x.clone();
    rms_norm_rows(&mut y, 16, Some(&w), 1e-6);
    for (row, out) in x.chunks(16).zip(y.chunks(16)) {
        let ms = row.iter().map(|v| (v * v) as f64).sum::<f64>() / 16.0;
        for ((v, g), o) in row.iter().zip(&w).zip(out) {
            let want = *v as f64 / (ms + 1e-6).sqrt() * *g as f64;
            assert!((*o as f64 - want).abs() < 1e-5, "{o} vs {want}");
        }
    }
    let mut c = x.clone();
    softcap(&mut c, 3.0);
    for (v, o) in x.iter().zip(&c) {
        let want = 3.0 * (*v as f64 / 3.0).tanh();
        assert!(
            (*o as f64 - want).abs() < 1e-5,
            "softcap({v}) = {o}, want {want}"
        );
    }
    let mut b = x.clone();
    add_to_rows(&mut b, &w);
    add_assign(&mut b, &x);
    scale(&mut b, 0.5);
    for (i, o) in b.iter().enumerate() {
        assert_eq!(*o, (x[i] + w[i % 16] + x[i]) * 0.5);
    }
}

#[test]
fn sum_matches_a_plain_sum() {
    let x = pseudo_random(71, 8, 1.0);
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    assert!((sum_inline(&x) as f64 - want).abs() < 1e-5);
}
