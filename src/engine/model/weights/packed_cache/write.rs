//! Writing a cache file: in the background, once a load is done, so a first load is not
//! slowed by the disk. The file is written under a temporary name in the same directory and
//! renamed into place when whole: a reader sees the old file or the new one, never part of
//! one, and two processes writing at once each rename a whole file. It is written in aligned
//! 2 MiB pieces, so that the page cache holds it in 2 MiB folios, which later loads map in
//! 2 MiB pages and use in place (`read::huge_mapping`).

use super::format::{self, Entry, Index, ALIGN};
use super::key::Key;
use crate::engine::model::weights::pages::Pages;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};
use tempfile::NamedTempFile;

/// A repacked matrix to write: its bytes are shared with the model that uses them, so keeping
/// them for the writer costs no copy.
pub struct Matrix {
    pub name: String,
    pub layout: String,
    pub bytes: Pages,
    /// The bytes' hash when it is known already (a matrix read back was checked against it).
    pub hash: Option<u64>,
}

/// The size of each write: a huge page, so each can become one 2 MiB folio of the page cache.
const PIECE: usize = 2 << 20;

/// The writes under way in this process, by the file they write.
static WRITES: Mutex<Vec<(PathBuf, JoinHandle<()>)>> = Mutex::new(Vec::new());

/// A temporary file left by a process that died while writing (its rename never came) is
/// removed by a later write once it is this old; a write under way is never this slow.
const ABANDONED_AFTER: Duration = Duration::from_secs(3600);

/// The prefix of every temporary file (see [`super::store`], which never lists them).
pub const TEMP_PREFIX: &str = ".writing-";

/// A temporary file in `dir` to write the cache into, made now so that a directory that
/// cannot be written is known while the load can still say so.
pub fn temp_in(dir: &Path) -> std::io::Result<NamedTempFile> {
    std::fs::create_dir_all(dir)?;
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
}

/// Writes `matrices` for `key` to `path` on a thread of its own (unless this process is
/// already writing that file), through `temp`.
pub fn spawn(path: PathBuf, temp: NamedTempFile, key: Key, matrices: Vec<Matrix>) {
    let Ok(mut writes) = WRITES.lock() else {
        return;
    };
    writes.retain(|(_, handle)| !handle.is_finished());
    if writes.iter().any(|(p, _)| *p == path) {
        return;
    }
    let target = path.clone();
    let spawned = std::thread::Builder::new()
        .name("repack-cache".into())
        .spawn(move || {
            lower_priority();
            if let Some(dir) = target.parent() {
                remove_abandoned(dir);
            }
            // A failed write leaves no file: the temporary one is removed when dropped, and
            // the next load repacks and tries again.
            let _ = write(temp, &key, &matrices)
                .and_then(|temp| temp.persist(&target).map(|_| ()).map_err(|e| e.error));
        });
    if let Ok(handle) = spawned {
        writes.push((path, handle));
    }
}

/// Waits for this process's writes to finish (before it exits, and before `taper bench`
/// measures loads that should find the cache). The writes stay listed until they are done, so
/// a second thread waiting at the same time waits for them too (taking them out to join them
/// let it return while the first still waited, before the file was renamed into place).
pub fn finish() {
    loop {
        let busy = WRITES
            .lock()
            .map(|mut writes| {
                writes.retain(|(_, handle)| !handle.is_finished());
                !writes.is_empty()
            })
            .unwrap_or(false);
        if !busy {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn write(
    mut temp: NamedTempFile,
    key: &Key,
    matrices: &[Matrix],
) -> std::io::Result<NamedTempFile> {
    // The index holds every offset, and the offsets depend on the index's length: lay the
    // matrices out after an index written with the widest placeholder offsets, so the real
    // index (no longer) fits before the first matrix.
    let mut entries: Vec<Entry> = matrices
        .iter()
        .map(|m| Entry {
            name: m.name.clone(),
            layout: m.layout.clone(),
            offset: u64::MAX,
            len: m.bytes.len() as u64,
            hash: m.hash.unwrap_or_else(|| format::hash(&m.bytes)),
        })
        .collect();
    let draft = Index {
        key: key.clone(),
        chunk: format::CHUNK,
        entries: entries.clone(),
    };
    let mut at = format::data_start(format::encode(&draft)?.len());
    for entry in &mut entries {
        entry.offset = at;
        at = (at + entry.len).next_multiple_of(ALIGN);
    }
    let index = Index { entries, ..draft };
    let head = format::encode(&index)?;
    let mut out = Pieces::new(temp.as_file_mut());
    out.put(&head)?;
    for (entry, m) in index.entries.iter().zip(matrices) {
        out.pad_to(entry.offset)?;
        out.put(&m.bytes)?;
    }
    out.end()?;
    Ok(temp)
}

/// Writes a file from its start in [`PIECE`]-sized, [`PIECE`]-aligned writes (the last one
/// shorter): a file system that keeps large folios (ext4 on the Linux 6.18 hosts measured)
/// gives each such write one 2 MiB folio of the page cache; writes of a matrix at a time, at
/// 4 KiB-aligned offsets, left as little as none of a file in them.
struct Pieces<'f> {
    file: &'f mut std::fs::File,
    piece: Vec<u8>,
    /// Bytes written to the file so far (a multiple of [`PIECE`]).
    written: u64,
}

impl<'f> Pieces<'f> {
    fn new(file: &'f mut std::fs::File) -> Self {
        Self {
            file,
            piece: Vec::with_capacity(PIECE),
            written: 0,
        }
    }

    fn put(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let take = bytes.len().min(PIECE - self.piece.len());
            self.piece.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.piece.len() == PIECE {
                self.flush_piece()?;
            }
        }
        Ok(())
    }

    /// Zeros up to the file offset `at` (none when it is already there).
    fn pad_to(&mut self, at: u64) -> std::io::Result<()> {
        const ZEROS: [u8; 4096] = [0; 4096];
        let mut here = self.written + self.piece.len() as u64;
        while here < at {
            let zeros = &ZEROS[..(at - here).min(ZEROS.len() as u64) as usize];
            self.put(zeros)?;
            here += zeros.len() as u64;
        }
        Ok(())
    }

    fn flush_piece(&mut self) -> std::io::Result<()> {
        self.file.write_all(&self.piece)?;
        self.written += self.piece.len() as u64;
        self.piece.clear();
        Ok(())
    }

    fn end(mut self) -> std::io::Result<()> {
        self.flush_piece()?;
        self.file.flush()
    }
}

/// Temporary files of writers that died (killed, the machine stopped) before renaming.
fn remove_abandoned(dir: &Path) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in listing.flatten() {
        let abandoned = entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > ABANDONED_AFTER);
        if abandoned {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The writer runs beside the first answer: it should take what the compute threads leave.
fn lower_priority() {
    // SAFETY: setpriority on the calling thread (Linux gives each thread its own nice value);
    // a failure leaves the priority as it was.
    #[cfg(target_os = "linux")]
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}
