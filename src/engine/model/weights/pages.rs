//! Memory for repacked weights: an [`Arena`] per load that repacked matrices are written into
//! one after another, in 2 MiB pages, and [`Pages`], one matrix's bytes, there or in the
//! repack cache's file mapped ([`ReadOnly`]).
//!
//! One arena rather than a map per matrix because the kernel gives a map 2 MiB pages only for
//! its whole, aligned 2 MiB stretches: a matrix under 2 MiB (every matrix of the small models,
//! the k/v projections of 4B ones) sat in 4 KiB pages of its own, and every matrix's tail did.
//! Packed one after another, all of them but the arena's last stretch stream through 2 MiB
//! pages, as the repack cache's file mapped in place does.

use memmap2::{Mmap, MmapMut, MmapRaw};
use std::ops::{Deref, Range};
use std::sync::{Arc, Mutex};

/// 2 MiB, the huge page size of x86-64 and of 4 KiB-page ARM64.
pub(super) const HUGE_PAGE: usize = 2 << 20;

/// Where each matrix starts in an arena: a cache line, so that no SIMD load of one row group
/// straddles two (the model file itself only promises 32 bytes).
const ALIGN: usize = 64;

/// The size of each further map when the first one (sized from the model file) is full.
const MORE: usize = 64 << 20;

/// The bytes of one repacked matrix: written once, then only read, and shared by whatever
/// uses it (the model, the repack cache's writer) without a copy.
#[derive(Clone)]
pub struct Pages {
    map: Arc<MmapRaw>,
    range: Range<usize>,
}

impl Deref for Pages {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `range` lies inside the map (checked where the `Pages` was made), and no
        // byte of it is written while a `Pages` exists: an arena's `Region` becomes one only
        // when it is done being written, and a `ReadOnly` map is never written.
        unsafe {
            std::slice::from_raw_parts(self.map.as_ptr().add(self.range.start), self.range.len())
        }
    }
}

/// A read-only map of a file whose bytes [`Pages`] may share (the repack cache's file, used in
/// place).
pub struct ReadOnly(Arc<MmapRaw>);

impl ReadOnly {
    pub fn new(map: Mmap) -> Self {
        Self(Arc::new(MmapRaw::from(map)))
    }

    /// The bytes `range` of the map, if it lies inside.
    pub fn pages(&self, range: Range<usize>) -> Option<Pages> {
        (range.start <= range.end && range.end <= self.0.len()).then(|| Pages {
            map: self.0.clone(),
            range,
        })
    }
}

/// Fresh anonymous memory handed out front to back, a matrix at a time, for one load's
/// repacked matrices.
pub struct Arena {
    state: Mutex<ArenaState>,
}

struct ArenaState {
    /// The map being handed out, and the offset of its first free byte.
    current: Option<(Arc<MmapRaw>, usize)>,
    /// The size of the next map.
    next_size: usize,
}

/// An arena's `len` bytes for one matrix, zeros until written; [`Region::done`] makes them
/// [`Pages`].
pub struct Region {
    map: Arc<MmapRaw>,
    range: Range<usize>,
}

impl Arena {
    /// An arena whose first map takes `expected` bytes (more are mapped as needed). The map is
    /// address space only: memory is taken as matrices are written.
    pub fn new(expected: usize) -> Self {
        Self {
            state: Mutex::new(ArenaState {
                current: None,
                next_size: expected,
            }),
        }
    }

    /// `len` bytes of zeros (as a repack's padding rows must be), after the matrices taken
    /// before.
    pub fn take(&self, len: usize) -> std::io::Result<Region> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| std::io::Error::other("the weight arena's lock is poisoned"))?;
        if let Some((map, next)) = &mut state.current {
            let start = next.next_multiple_of(ALIGN);
            if start.checked_add(len).is_some_and(|end| end <= map.len()) {
                *next = start + len;
                return Ok(Region {
                    map: map.clone(),
                    range: start..start + len,
                });
            }
        }
        // Where the address space asked for is refused (a strict overcommit policy counts it
        // all), a map of this matrix's size still loads the model, as a map per matrix did.
        let (map, start) =
            huge_page_map(state.next_size.max(len)).or_else(|_| huge_page_map(len))?;
        // The rest of a full map stays address space: no page of it was touched.
        state.next_size = MORE;
        state.current = Some((map.clone(), start + len));
        Ok(Region {
            map,
            range: start..start + len,
        })
    }
}

impl Arena {
    /// Takes back a region that will not be used (its bytes failed a check), zeroed: when it
    /// is the last one taken, the next matrix goes where it was, so a damaged cache file does
    /// not cost its matrices' memory twice.
    pub fn give_back(&self, mut region: Region) {
        region.bytes_mut().fill(0);
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Some((map, next)) = &mut state.current {
            if Arc::ptr_eq(map, &region.map) && *next == region.range.end {
                *next = region.range.start;
            }
        }
    }
}

/// A map of at least `len` bytes and the offset in it of its first 2 MiB boundary, advised to
/// use 2 MiB pages: in them a 4.5 GB model takes a few thousand page faults instead of a
/// million, and decode's streaming reads miss the TLB less. (Linux aligns large anonymous
/// maps so itself since 6.7; older kernels need the offset.)
fn huge_page_map(len: usize) -> std::io::Result<(Arc<MmapRaw>, usize)> {
    let padded = len.max(1).checked_add(HUGE_PAGE).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            "no address space that large",
        )
    })?;
    let map = MmapMut::map_anon(padded)?;
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    let address = map.as_ptr() as usize;
    let start = address.next_multiple_of(HUGE_PAGE) - address;
    Ok((Arc::new(MmapRaw::from(map)), start))
}

impl Region {
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the arena hands each range out once, inside the map, and this region is
        // its only handle until `done`: nothing else reads or writes these bytes meanwhile.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.map.as_mut_ptr().add(self.range.start),
                self.range.len(),
            )
        }
    }

    /// The bytes as written, from now on only read.
    pub fn done(self) -> Pages {
        Pages {
            map: self.map,
            range: self.range,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_are_zeros_aligned_apart_and_keep_what_was_written() {
        let arena = Arena::new(10_000);
        let mut pages = Vec::new();
        // The third does not fit the first map (10 000 bytes, and up to 2 MiB before its first
        // 2 MiB boundary): it starts another.
        for (i, len) in [100, 5000, 3 << 20, 1].into_iter().enumerate() {
            let mut region = arena.take(len).expect("memory");
            assert!(region.bytes_mut().iter().all(|&b| b == 0), "zeros");
            region.bytes_mut().fill(i as u8 + 1);
            pages.push(region.done());
        }
        for (i, p) in pages.iter().enumerate() {
            assert!(p.iter().all(|&b| b == i as u8 + 1), "matrix {i} kept");
            assert_eq!(p.as_ptr() as usize % ALIGN, 0);
        }
        // The first map starts at a 2 MiB boundary.
        assert_eq!(pages[0].as_ptr() as usize % HUGE_PAGE, 0);
        // The first two share a map; the third had to start a new one, the fourth follows it.
        assert!(Arc::ptr_eq(&pages[0].map, &pages[1].map));
        assert!(!Arc::ptr_eq(&pages[1].map, &pages[2].map));
        assert!(Arc::ptr_eq(&pages[2].map, &pages[3].map));
        assert_eq!(pages[1].range.start - pages[0].range.start, 128);
    }

    #[test]
    fn a_first_map_refused_is_replaced_by_one_of_the_matrix_size() {
        // Past what any address space holds, and past `usize` once the alignment is added.
        for expected in [usize::MAX / 2, usize::MAX] {
            let arena = Arena::new(expected);
            let mut region = arena.take(5000).expect("a small map");
            region.bytes_mut().fill(1);
            assert_eq!(region.done().len(), 5000);
        }
    }

    #[test]
    fn a_region_given_back_is_handed_out_again_as_zeros() {
        let arena = Arena::new(1 << 20);
        let first = arena.take(1000).expect("memory").done();
        let mut damaged = arena.take(5000).expect("memory");
        damaged.bytes_mut().fill(7);
        let at = damaged.range.clone();
        arena.give_back(damaged);
        let mut again = arena.take(5000).expect("memory");
        assert_eq!(again.range, at, "the same bytes");
        assert!(again.bytes_mut().iter().all(|&b| b == 0), "zeros");
        assert!(
            first.iter().all(|&b| b == 0),
            "the matrix before is untouched"
        );
    }

    #[test]
    fn a_read_only_map_hands_out_only_ranges_inside_it() {
        let file = tempfile::tempfile().expect("temp file");
        file.set_len(300).expect("size");
        // SAFETY: a test's own file, not changed while mapped.
        let map = ReadOnly::new(unsafe { Mmap::map(&file) }.expect("map"));
        assert_eq!(map.pages(10..300).map(|p| p.len()), Some(290));
        assert!(map.pages(10..301).is_none());
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 20..10;
        assert!(map.pages(backwards).is_none());
    }
}
