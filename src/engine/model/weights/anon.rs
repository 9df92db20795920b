//! Fresh anonymous memory for weights, in 2 MiB pages where the kernel allows: what repacked
//! matrices live in, whether repacked at load or read back from the repack cache.

use memmap2::MmapMut;

/// `len` bytes of zeros (as a repack's padding rows must be). In 2 MiB pages a 4.5 GB model
/// takes a few thousand page faults instead of a million, and decode's streaming reads miss
/// the TLB less.
pub(super) fn anon_pages(len: usize) -> std::io::Result<MmapMut> {
    let map = MmapMut::map_anon(len.max(1))?;
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Ok(map)
}
