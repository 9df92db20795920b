//! The cache directory as `taper models` shows it: its files, what they take, and pruning.

use super::write::TEMP_PREFIX;
use super::EXTENSION;
use std::path::{Path, PathBuf};

/// One cache file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheFile {
    pub path: PathBuf,
    pub bytes: u64,
}

/// The cache files in `dir` (temporary files of writes under way are not listed), by name; a
/// missing directory has none.
pub fn list(dir: &Path) -> Vec<CacheFile> {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<CacheFile> = listing
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with(TEMP_PREFIX) && name.ends_with(&format!(".{EXTENSION}"))
        })
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some(CacheFile {
                path: e.path(),
                bytes: meta.len(),
            })
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// Bytes the cache files in `dir` take.
pub fn total_bytes(dir: &Path) -> u64 {
    list(dir).iter().map(|f| f.bytes).sum()
}

/// Removes every cache file in `dir` (a write under way renames its whole file in later, as
/// it would have into an empty directory). Returns the files removed and their bytes; the first file that cannot be removed is an
/// error naming it.
pub fn prune(dir: &Path) -> std::io::Result<(usize, u64)> {
    let (mut count, mut bytes) = (0, 0);
    for file in list(dir) {
        std::fs::remove_file(&file.path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", file.path.display())))?;
        count += 1;
        bytes += file.bytes;
    }
    Ok((count, bytes))
}
