//! Reading a matrix back, checked chunk by chunk in parallel against the hash it was written
//! with. Where the kernel maps the whole cache file in 2 MiB pages ([`huge_mapping`]), the
//! matrices are used where they lie, in the page cache: a load then costs the hash check and
//! no copy. Elsewhere each matrix is copied into the load's arena, in 2 MiB pages, where
//! decoding wants it (streaming weights through 4 KiB pages of a file map decoded 5–20%
//! slower: `docs/benchmarks/zen4-epyc.md`).

use super::format::{self, Entry, CHUNK};
use crate::engine::model::weights::pages::{Arena, Pages, ReadOnly, HUGE_PAGE};
use memmap2::Mmap;
use rayon::prelude::*;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The matrix `entry` describes, from `mapped` (the whole file in huge pages) when there is
/// one, else copied out of `file` into `arena`; `None` when it cannot be read or its bytes are
/// not the ones written (it is then repacked).
pub fn matrix(
    file: &File,
    mapped: Option<&ReadOnly>,
    entry: &Entry,
    arena: &Arena,
) -> Option<Pages> {
    match mapped {
        Some(map) => in_place(map, entry),
        None => copied(file, entry, arena),
    }
}

fn in_place(map: &ReadOnly, entry: &Entry) -> Option<Pages> {
    let start = usize::try_from(entry.offset).ok()?;
    let pages = map.pages(start..start.checked_add(usize::try_from(entry.len).ok()?)?)?;
    let digests: Vec<u64> = pages
        .par_chunks(CHUNK)
        .map(xxhash_rust::xxh3::xxh3_64)
        .collect();
    (format::combine(&digests) == entry.hash).then_some(pages)
}

/// A matrix that fails its check gives its bytes back to the arena, where its repack goes.
fn copied(file: &File, entry: &Entry, arena: &Arena) -> Option<Pages> {
    let len = usize::try_from(entry.len).ok()?;
    let mut region = arena.take(len).ok()?;
    let digests: Option<Vec<u64>> = region
        .bytes_mut()
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map(|(i, chunk)| {
            let at = entry.offset + (i * CHUNK) as u64;
            file.read_exact_at(chunk, at).ok()?;
            Some(xxhash_rust::xxh3::xxh3_64(chunk))
        })
        .collect();
    match digests {
        Some(digests) if format::combine(&digests) == entry.hash => Some(region.done()),
        _ => {
            arena.give_back(region);
            None
        }
    }
}

/// At least this share of the file's whole huge pages must be mapped as such for the map to
/// be used in place.
const HUGE_SHARE: (usize, usize) = (9, 10);

/// How the kernel maps a cache file.
pub enum Mapping {
    /// (Nearly) all of it in 2 MiB pages: its matrices are used in place.
    Huge(ReadOnly),
    /// Only part of it: the page cache holds the rest in smaller folios (the file was written
    /// in small pieces, as before taper wrote it in 2 MiB ones, or read back in them). Its
    /// matrices are copied; the file written again is held in 2 MiB folios.
    Partly,
    /// None of it (another kernel or file system), or it could not be mapped: copied.
    Not,
}

/// `file` mapped whole, and how: Linux maps a file in 2 MiB pages at a 2 MiB-aligned address
/// where its page cache holds 2 MiB folios, which a file system that keeps large folios (ext4
/// on the Linux 6.18 hosts measured) makes for a file written in aligned 2 MiB pieces (as
/// [`super::write`] does) or read in through a mapping advised to use huge pages (as this one
/// is: the parts of the file not in memory are read in here).
#[cfg(target_os = "linux")]
pub fn huge_mapping(file: &File) -> Mapping {
    // SAFETY: read-only. Cache files are replaced by rename and removed by unlink, which leave
    // a mapped file whole; a process truncating it in place could make reads fault (SIGBUS),
    // the risk every mapped model file carries (see `mapped.rs`).
    let Ok(map) = (unsafe { Mmap::map(file) }) else {
        return Mapping::Not;
    };
    if !(map.as_ptr() as usize).is_multiple_of(HUGE_PAGE) {
        return Mapping::Not;
    }
    let _ = map.advise(memmap2::Advice::HugePage);
    // One page of each whole 2 MiB stretch is mapped first: it is mapped as a 2 MiB page where
    // the page cache holds that stretch in one folio, so smaps then tells the share of the file
    // that is, for about a thousand faults a 2 GB file. Populating the whole file first would
    // cost a copy-bound load about 0.2 s more where the kernel maps none of it so.
    for stretch in (0..map.len() / HUGE_PAGE).map(|i| i * HUGE_PAGE) {
        if map
            .advise_range(memmap2::Advice::PopulateRead, stretch, 1)
            .is_err()
        {
            return Mapping::Not;
        }
    }
    match huge_mapped_bytes(map.as_ptr() as usize) {
        Some(huge) if mostly_huge(huge, map.len()) => {
            // The rest now, so a load reads no page for the first time mid-answer.
            match map.advise(memmap2::Advice::PopulateRead) {
                Ok(()) => Mapping::Huge(ReadOnly::new(map)),
                Err(_) => Mapping::Not,
            }
        }
        Some(huge) if huge > 0 => Mapping::Partly,
        _ => Mapping::Not,
    }
}

/// Whether `huge` bytes of a `len`-byte mapping in 2 MiB pages are enough to use it in place
/// (a tail shorter than 2 MiB never is one).
fn mostly_huge(huge: usize, len: usize) -> bool {
    let whole_pages = len / HUGE_PAGE * HUGE_PAGE;
    whole_pages > 0 && huge * HUGE_SHARE.1 >= whole_pages * HUGE_SHARE.0
}

#[cfg(not(target_os = "linux"))]
pub fn huge_mapping(_: &File) -> Mapping {
    Mapping::Not
}

/// Bytes of the mapping that starts at `start` mapped in 2 MiB pages, from
/// `/proc/self/smaps`.
#[cfg(target_os = "linux")]
fn huge_mapped_bytes(start: usize) -> Option<usize> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    file_pmd_mapped(&smaps, start)
}

/// The `FilePmdMapped` of the mapping starting at `start` in an smaps text.
fn file_pmd_mapped(smaps: &str, start: usize) -> Option<usize> {
    let head = format!("{start:08x}-");
    let lines = smaps.lines().skip_while(|l| !l.starts_with(&head)).skip(1);
    lines
        .take_while(|l| !l.starts_with("VmFlags:"))
        .find_map(|l| l.strip_prefix("FilePmdMapped:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<usize>().ok())
        .map(|kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::{file_pmd_mapped, mostly_huge, HUGE_PAGE};

    #[test]
    fn nine_tenths_of_the_whole_huge_pages_are_enough() {
        let len = 100 * HUGE_PAGE + 4096;
        assert!(mostly_huge(100 * HUGE_PAGE, len));
        assert!(mostly_huge(90 * HUGE_PAGE, len));
        assert!(!mostly_huge(89 * HUGE_PAGE, len));
        assert!(!mostly_huge(0, HUGE_PAGE - 1), "a file under one huge page");
    }

    const SMAPS: &str = "\
55d0c0000000-55d0c0021000 r--p 00000000 fe:00 12 /usr/bin/taper
Size:                132 kB
FilePmdMapped:         0 kB
VmFlags: rd mr mw me
7f3c80000000-7f3c8ec00000 r--s 00000000 fe:00 34 /cache/m.avx2.1.repacked
Size:             241664 kB
Rss:              241664 kB
FilePmdMapped:    239616 kB
VmFlags: rd sh mr mw me hg
7f3c8ec00000-7f3c8ec01000 rw-p 00000000 00:00 0
FilePmdMapped:         7 kB
VmFlags: rd wr mr mw me
";

    #[test]
    fn the_huge_mapped_bytes_of_one_mapping_are_read_from_smaps() {
        assert_eq!(
            file_pmd_mapped(SMAPS, 0x7f3c_8000_0000),
            Some(239_616 * 1024)
        );
        assert_eq!(file_pmd_mapped(SMAPS, 0x55d0_c000_0000), Some(0));
        assert_eq!(file_pmd_mapped(SMAPS, 0x1000), None, "no such mapping");
        let without = SMAPS.replace("FilePmdMapped:    239616 kB\n", "");
        assert_eq!(
            file_pmd_mapped(&without, 0x7f3c_8000_0000),
            None,
            "a kernel that does not say"
        );
    }
}
