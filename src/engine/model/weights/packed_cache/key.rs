//! What a cache file stands for: one model file as it is now (its identity, size and
//! modification time) repacked for one kernel path at one version of the layouts, and the
//! cache file's name for it.

use crate::engine::model::runtime::kernel_path;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Raised whenever a repacker changes what it writes: every cache file of an older version is
/// then stale. (`tests::layouts_have_not_changed` fails until it is.)
pub const LAYOUT_VERSION: u32 = 1;

/// Everything a cache file must agree on to be read. A model file replaced by another (a new
/// download, an edit) changes its size, modification time or inode; a different kernel path
/// (`TAPER_KERNELS=avx2`, another CPU sharing a home directory) wants other layouts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    /// The model file, canonical.
    pub source: PathBuf,
    pub size: u64,
    pub modified_s: u64,
    pub modified_ns: u32,
    pub device: u64,
    pub inode: u64,
    pub kernels: String,
    pub layout_version: u32,
}

impl Key {
    /// The key of `model` as it is on disk now, for the kernel path in use.
    pub fn of(model: &Path) -> std::io::Result<Self> {
        let source = model.canonicalize()?;
        let meta = std::fs::metadata(&source)?;
        let modified = meta
            .modified()?
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let (device, inode) = identity(&meta);
        Ok(Self {
            source,
            size: meta.len(),
            modified_s: modified.as_secs(),
            modified_ns: modified.subsec_nanos(),
            device,
            inode,
            kernels: kernel_path::name().to_string(),
            layout_version: LAYOUT_VERSION,
        })
    }

    /// The cache file's name: the model's name (for people listing the directory), the kernel
    /// path, and a hash of the model's full path (two `model.gguf` in different directories).
    /// A changed model file keeps its name, so its new cache replaces the stale one.
    pub fn file_name(&self) -> String {
        let stem: String = self
            .source
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path_hash =
            xxhash_rust::xxh3::xxh3_64(self.source.as_os_str().as_encoded_bytes()) as u32;
        format!(
            "{stem}.{}.{path_hash:08x}.{}",
            self.kernels,
            super::EXTENSION
        )
    }
}

fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}
