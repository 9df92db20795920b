//! The repack cache: a model's repacked matrices kept on disk after its first load, so that
//! later loads read them back (at the page cache's speed) instead of repacking every matrix.
//!
//! One file per model file and kernel path ([`key`]), in taper's cache directory. A file is
//! read only when it is for the model file as it is now and for this version of the layouts,
//! and each matrix only when its bytes hash to what was written with them; anything else is
//! repacked and the file written again ([`write`], in the background and atomically). So a
//! truncated, stale, foreign or damaged file costs one ordinary load, never a wrong weight.
//! A directory that cannot be written costs a notice and a repack at each load.

mod format;
mod key;
mod read;
pub mod store;
mod write;

use super::pages::{Arena, Pages};
use crate::engine::gguf::GgufHeader;
use crate::engine::model::kernels::Layout;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

pub use key::LAYOUT_VERSION;

/// The cache files' extension.
const EXTENSION: &str = "repacked";

/// The cache directory of this process's loads, set once by a front end from its flags and
/// config ([`configure`]); none (the library's default, and every test's unless it says) means
/// every load repacks.
static DIR: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Sets where this process's loads keep repacked matrices (`None`: nowhere).
pub fn configure(dir: Option<PathBuf>) {
    if let Ok(mut d) = DIR.write() {
        *d = dir;
    }
}

/// The directory [`configure`] set.
pub fn configured_dir() -> Option<PathBuf> {
    DIR.read().ok().and_then(|d| d.clone())
}

/// Waits for the cache files this process is writing (call before exiting).
pub fn finish_writes() {
    write::finish();
}

/// One load's view of its cache file: the matrices it may read back, and the ones it
/// repacked, to be written once the load is done.
pub struct PackedCache {
    dir: PathBuf,
    path: PathBuf,
    key: key::Key,
    /// The file and its index, when there is a valid one for this key.
    found: Option<Found>,
    state: Mutex<Recorded>,
}

/// A valid cache file for the load's key.
struct Found {
    file: File,
    index: format::Index,
    /// How the kernel maps the file (in 2 MiB pages: its matrices are used in place).
    mapping: read::Mapping,
}

#[derive(Default)]
struct Recorded {
    matrices: Vec<write::Matrix>,
    /// Matrices repacked rather than read back: unless none, the file is (re)written.
    repacked: usize,
}

/// What a load's repack cache did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Matrices read back from the cache file.
    pub read_back: usize,
    /// Matrices repacked (not in the file, or not as written).
    pub repacked: usize,
    /// Whether the matrices read back are used in place, in the cache file mapped in 2 MiB
    /// pages (else they were copied out of it).
    pub in_place: bool,
    /// Why the cache could not be written, for the user.
    pub notice: Option<String>,
}

impl PackedCache {
    /// The cache of `header`'s model in `dir`. `None` when the model file cannot be
    /// identified (it then loads as without a cache).
    pub fn open(dir: &Path, header: &GgufHeader) -> Option<Self> {
        let key = key::Key::of(&header.path).ok()?;
        let path = dir.join(key.file_name());
        let found = File::open(&path).ok().and_then(|file| {
            let index = format::read_index(&file, &key)?;
            let mapping = read::huge_mapping(&file);
            Some(Found {
                file,
                index,
                mapping,
            })
        });
        Some(Self {
            dir: dir.to_path_buf(),
            path,
            key,
            found,
            state: Mutex::default(),
        })
    }

    /// The matrix `name`, repacked into `layout` (`len` bytes), read back from the file (used
    /// in place, or copied into `arena`); `None` when the file does not hold it as asked, or
    /// holds other bytes than it wrote.
    pub(in crate::engine::model::weights) fn fetch(
        &self,
        name: &str,
        layout: Layout,
        len: usize,
        arena: &Arena,
    ) -> Option<Pages> {
        let found = self.found.as_ref()?;
        let tag = layout_tag(layout);
        let entry = found
            .index
            .entries
            .iter()
            .find(|e| e.name == name && e.layout == tag && e.len == len as u64)?;
        let in_place = match &found.mapping {
            read::Mapping::Huge(map) => Some(map),
            _ => None,
        };
        let pages = read::matrix(&found.file, in_place, entry, arena)?;
        self.keep(name, layout, pages.clone(), Some(entry.hash));
        Some(pages)
    }

    /// A matrix this load repacked, for the file.
    pub(in crate::engine::model::weights) fn record(
        &self,
        name: &str,
        layout: Layout,
        bytes: Pages,
    ) {
        self.keep(name, layout, bytes, None);
    }

    /// A matrix this load holds for the file: repacked now (no `hash` yet), or read back and
    /// checked against its `hash` (not hashed again when the file is rewritten).
    fn keep(&self, name: &str, layout: Layout, bytes: Pages, hash: Option<u64>) {
        if let Ok(mut state) = self.state.lock() {
            state.repacked += usize::from(hash.is_none());
            state.matrices.push(write::Matrix {
                name: name.to_string(),
                layout: layout_tag(layout),
                bytes,
                hash,
            });
        }
    }

    /// Ends the load: when anything was repacked, the file is written in the background; so it
    /// is when the kernel mapped only part of it in 2 MiB pages, so that the next load finds
    /// it all in 2 MiB folios and uses it in place.
    pub fn finish(self) -> Outcome {
        let state = self.state.into_inner().unwrap_or_default();
        let read_back = state.matrices.len() - state.repacked;
        let mapping = self.found.as_ref().map(|f| &f.mapping);
        let mut outcome = Outcome {
            read_back,
            repacked: state.repacked,
            in_place: read_back > 0 && matches!(mapping, Some(read::Mapping::Huge(_))),
            notice: None,
        };
        let partly_huge = read_back > 0 && matches!(mapping, Some(read::Mapping::Partly));
        if state.repacked == 0 && !partly_huge {
            return outcome;
        }
        match write::temp_in(&self.dir) {
            Ok(temp) => write::spawn(self.path, temp, self.key, state.matrices),
            Err(e) if state.repacked > 0 => {
                outcome.notice = Some(format!(
                    "the repack cache in {} cannot be written ({e}): this model is repacked \
                     at every load. `repack_cache = false` in the config turns the cache off.",
                    self.dir.display()
                ))
            }
            // The file is whole and read back; only its copy costs more than a mapping.
            Err(_) => {}
        }
        outcome
    }
}

/// A layout as the file names it.
fn layout_tag(layout: Layout) -> String {
    format!("{layout:?}")
}

#[cfg(test)]
mod tests;
