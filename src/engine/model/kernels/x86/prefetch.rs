//! Software prefetch for the 1-row (decode) kernels, which stream each weight once from memory.

use core::arch::x86_64::*;
use std::sync::LazyLock;

/// How far past the weights being read a decode step asks for the next ones, on Intel cores:
/// 6 KB (about two blocks of the sixteen-row k-quant layouts, eleven of Q8_0×16's).
const INTEL_PREFETCH_BYTES: usize = 6 << 10;

/// The same on AMD cores before Zen 4 (no AVX-512): 2 KB, about one block of the k-quant
/// layouts, four of Q8_0×16's.
const EARLY_ZEN_PREFETCH_BYTES: usize = 2 << 10;

/// Blocks of at least this many bytes are "large" ([`Distances::large`]): the sixteen-row
/// k-quant layouts (Q4_K×16 2,304 bytes, Q5_K×16 2,816, Q6_K×16 3,360), not the 32-element
/// ones (Q8_0×16 544, Q5_0×16 352, Q4_1×16 320).
const LARGE_BLOCK: usize = 2 << 10;

/// How far past the block being read the decode kernels hint: for blocks smaller than
/// [`LARGE_BLOCK`] and for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Distances {
    small: usize,
    large: usize,
}

impl Distances {
    const fn both(bytes: usize) -> Self {
        Self {
            small: bytes,
            large: bytes,
        }
    }
}

/// The distances this CPU gets, decided once. On Intel cores the hardware prefetcher alone
/// left the kernels waiting on memory, and hinting 6 KB ahead made the 1-row products over
/// matrices larger than the caches a third faster (Gemma 3's output head: 29–34 ms → 19–24
/// ms, an AVX-512 Xeon). On AMD's Zen 4 the same hints made decode slower than no hints at
/// all, and hinting the block about to be read, all its lines at once, made it fastest: a
/// Qwen3-4B-shaped Q4_K_M, 2 threads, 6.0–6.8 tok/s 6 KB ahead and 6.2–7.5 with no hint
/// against 8.3–8.6 on AVX2 (AVX-512: 6.4–7.6 → 9.0–9.2); Gemma 3 270M 80–82 → 88 (AVX2) and
/// 70–71 → 84–89 (AVX-512). The lines of one block are read in two passes (the halves of
/// each 64-byte run), and Q6_K's low bits, high bits and scales interleave; asked for
/// together, their misses overlap. On Zen 3 (AVX2 only) the block about to be read is hinted
/// too late: 2 KB ahead read matrices larger than the caches faster (2 threads, medians of 15
/// alternating runs: Q8_0×16 19.5 → 22.7 GB/s, Q6_K×16 20.5 → 24.1, Q5_0×16 21.1 → 24.3,
/// Q4_K×16 level; the machine streams 31–33 GB/s) and made whole decodes 10–20% faster (1
/// and 3 KB were slower). On Zen 2 the small blocks want the same 2 KB (SmolLM2 135M 138–149
/// → 159–168 tok/s, Gemma 3 270M 70–74 → 85–89), but the k-quants' large blocks want the
/// block about to be read, as on Zen 4: the Qwen3-4B shape 6.2–6.3 → 7.6–7.9 tok/s, with the
/// small models level (2 threads, alternating; 1, 3, 4 and 8 KB for every block gave
/// 5.6–6.6). AMD added AVX-512 with Zen 4, so its presence tells Zen 3 from Zen 4 (Zen 5, not
/// measured, is taken with Zen 4); Zen 2 and the Zens before it are CPU family 17h, Zen 3 and
/// 4 family 19h.
static DISTANCES: LazyLock<Distances> = LazyLock::new(|| match amd_family() {
    None => Distances::both(INTEL_PREFETCH_BYTES),
    Some(_) if crate::engine::model::cpu::features().avx512f => Distances::both(0),
    Some(ZEN_2_AND_EARLIER) => Distances {
        small: EARLY_ZEN_PREFETCH_BYTES,
        large: 0,
    },
    Some(_) => Distances::both(EARLY_ZEN_PREFETCH_BYTES),
});

/// AMD's CPU family of Zen, Zen+ and Zen 2.
const ZEN_2_AND_EARLIER: u32 = 0x17;

/// The CPU family when the vendor is AMD (or Hygon, whose cores are Zen); None otherwise.
fn amd_family() -> Option<u32> {
    if !is_amd() {
        return None;
    }
    // CPUID 1's EAX: base family in bits 8–11, extended family (added when the base is 0xF)
    // in bits 20–27.
    let eax = __cpuid(1).eax;
    let base = (eax >> 8) & 0xF;
    let extended = (eax >> 20) & 0xFF;
    Some(if base == 0xF { base + extended } else { base })
}

/// Whether the CPU's vendor is AMD (or Hygon, whose cores are Zen).
fn is_amd() -> bool {
    let id = __cpuid(0);
    let mut vendor = [0u8; 12];
    for (i, reg) in [id.ebx, id.edx, id.ecx].into_iter().enumerate() {
        vendor[4 * i..4 * i + 4].copy_from_slice(&reg.to_le_bytes());
    }
    matches!(&vendor, b"AuthenticAMD" | b"HygonGenuine")
}

/// Decode reads each weight once, straight from memory: hints the `len` bytes (one block)
/// this CPU's distance for such blocks past `at` ([`DISTANCES`]), all at once, a line each.
/// Called only from the AVX2 and AVX-512 kernels (`prefetcht0` itself is SSE).
#[target_feature(enable = "sse")]
#[inline]
pub(super) fn prefetch_ahead(w: &[u8], at: usize, len: usize) {
    let distances = *DISTANCES;
    let ahead = match len >= LARGE_BLOCK {
        true => distances.large,
        false => distances.small,
    };
    let from = (at + ahead).min(w.len());
    let to = (from + len).min(w.len());
    for line in w[from..to].chunks(64) {
        // A prefetch never faults and reads nothing; the pointer is inside `w`.
        _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast());
    }
}

#[cfg(test)]
mod tests {
    /// CPUID's vendor agrees with the kernel's (Linux names it in `/proc/cpuinfo`).
    #[test]
    #[cfg(target_os = "linux")]
    fn the_vendor_is_the_one_linux_reports() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let vendor = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("vendor_id"))
            .and_then(|rest| rest.split(':').nth(1))
            .map(str::trim)
            .expect("a vendor_id line");
        let amd = matches!(vendor, "AuthenticAMD" | "HygonGenuine");
        assert_eq!(super::is_amd(), amd, "vendor_id {vendor}");
    }

    /// CPUID's family agrees with the kernel's, on AMD.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_family_is_the_one_linux_reports() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let family: u32 = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("cpu family"))
            .and_then(|rest| rest.split(':').nth(1))
            .and_then(|f| f.trim().parse().ok())
            .expect("a cpu family line");
        if super::is_amd() {
            assert_eq!(super::amd_family(), Some(family));
        } else {
            assert_eq!(super::amd_family(), None);
        }
    }
}
