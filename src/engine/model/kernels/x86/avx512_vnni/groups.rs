//! What the AVX-512 VNNI kernels of the sixteen-row layouts share ([`crate::engine::model::kernels::packed`]):
//! the driver over groups and blocks, and the broadcast `vpdpbusd` inner loop. Soundness as in
//! [`super::ggml`].

use super::ggml::load64;
use super::Vnni;
use crate::engine::model::kernels::packed::{self, each_group};
use crate::engine::model::kernels::x86::avx2::ops::arr;
use crate::engine::model::kernels::x86::prefetch::prefetch_ahead;
use crate::engine::model::kernels::Q8Block;
use core::arch::x86_64::*;

/// `start + Σ_g q[g] · y[4g..4g + 4]` lane by lane over `N` groups (`y` has at least `4 N`
/// bytes), the four activation bytes broadcast to every lane (the sixteen-row layouts: lane
/// `i` is weight row `i`). Two chains, so consecutive `vpdpbusd`s do not wait on each other;
/// integer, so the order is free.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn dot_broadcast<const N: usize>(q: &[__m512i; N], y: &[i8], start: __m512i) -> __m512i {
    let mut even = start;
    let mut odd = _mm512_setzero_si512();
    for (g, &qg) in q.iter().enumerate() {
        let four: &[i8; 4] = arr(y, 4 * g);
        let yg = _mm512_set1_epi32(i32::from_le_bytes(four.map(|v| v as u8)));
        if g % 2 == 0 {
            even = _mm512_dpbusd_epi32(even, qg, yg);
        } else {
            odd = _mm512_dpbusd_epi32(odd, qg, yg);
        }
    }
    _mm512_add_epi32(even, odd)
}

/// Quants `4g..` of every row, g = 0..8, from the four 64-byte runs at `at + 64 k`: the low
/// nibbles of run `g` for g < 4, then the high ones (the sixteen-row layouts' shared packing).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn nibbles8(block: &[u8], at: usize) -> [__m512i; 8] {
    let m4 = _mm512_set1_epi8(0xF);
    let packed: [__m512i; 4] = std::array::from_fn(|k| load64::<u8>(arr(block, at + 64 * k)));
    std::array::from_fn(|g| {
        let p = packed[g % 4];
        _mm512_and_si512(if g < 4 { p } else { _mm512_srli_epi16(p, 4) }, m4)
    })
}

/// The five-bit quants: the nibbles `nib`, and bit `g` of the high-bit bytes `high` moved to
/// bit 4 of group `g` (the Q5_0×16 and Q5_K×16 layouts' packing).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn with_fifth_bits(nib: [__m512i; 8], high: __m512i) -> [__m512i; 8] {
    let bit4 = _mm512_set1_epi8(0x10);
    std::array::from_fn(|g| {
        let fifth = match g {
            0 => _mm512_slli_epi16(high, 4),
            1 => _mm512_slli_epi16(high, 3),
            2 => _mm512_slli_epi16(high, 2),
            3 => _mm512_slli_epi16(high, 1),
            4 => high,
            5 => _mm512_srli_epi16(high, 1),
            6 => _mm512_srli_epi16(high, 2),
            _ => _mm512_srli_epi16(high, 3),
        };
        _mm512_or_si512(nib[g], _mm512_and_si512(fifth, bit4))
    })
}

/// Block `b` of a 32-element layout with one scale per row (`d`, lane `i`: row `i`) and its
/// quants `q` against every activation row: `acc[r] += (Σ q·y + offset[r]) · d · d_a`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn add_scaled<const R: usize>(
    d: __m512,
    q: &[__m512i; 8],
    b: usize,
    a: &[&[Q8Block]; R],
    offset: &[i32; R],
    acc: &mut [__m512; R],
) {
    for ((ar, acc), &start) in a.iter().zip(acc).zip(offset) {
        let ab = &ar[b];
        let isum = _mm512_cvtepi32_ps(dot_broadcast(q, &ab.qs, _mm512_set1_epi32(start)));
        *acc = _mm512_fmadd_ps(isum, _mm512_mul_ps(d, _mm512_set1_ps(ab.d)), *acc);
    }
}

/// The body of a sixteen-row kernel ([`crate::engine::model::kernels::packed`]): checks the lengths, then for each
/// group of rows and each of its `B`-byte blocks `b` runs `block(bytes, b, acc)`, which adds
/// that block's products into `acc[r]` (lane `i`: row `i` of the group against activation
/// row `r`), with the AVX-512 features on; the sums go to `out`.
pub(super) fn x16_groups<A, const R: usize, const B: usize>(
    _: Vnni,
    w: &[u8],
    a: &[&[A]; R],
    out: &mut [[f32; R]],
    block: impl FnMut(&[u8; B], usize, &mut [__m512; R]),
) {
    let nb = packed::check(w, a, out.len(), B);
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    fn each<const R: usize, const B: usize>(
        w: &[u8],
        nb: usize,
        out: &mut [[f32; R]],
        mut block: impl FnMut(&[u8; B], usize, &mut [__m512; R]),
    ) {
        each_group(out, |g, lanes| {
            let mut acc = [_mm512_setzero_ps(); R];
            for b in 0..nb {
                let at = (g * nb + b) * B;
                if R == 1 {
                    // Decode streams the weights once from memory (see `prefetch_ahead`).
                    prefetch_ahead(w, at, B);
                }
                block(arr(w, at), b, &mut acc);
            }
            for (lane, sum) in lanes.iter_mut().zip(acc) {
                // SAFETY: `lane` is 16 writable f32; storeu has no alignment requirement.
                unsafe { _mm512_storeu_ps(lane.as_mut_ptr(), sum) };
            }
        });
    }
    // SAFETY: the `Vnni` token proves the CPU has the features `each` is compiled for.
    unsafe { each(w, nb, out, block) }
}
