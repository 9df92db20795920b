//! Session files on disk: atomic saves, the listing, lookup by id or prefix, rename, delete.
//! A file this build cannot read (newer version, corrupted) is reported and never written
//! over or removed, except by an explicit delete.

use super::format::{parse_session, valid_id, Session, SessionError, MAX_SESSION_BYTES};
use anyhow::{anyhow, bail, Context, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Temporary files of saves in progress start with this; the listing skips them (a save
/// killed midway leaves one behind, and a later save removes it once it is stale).
pub const TEMP_PREFIX: &str = ".taper-save-";
/// A temporary file this old belongs to no save still running.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// `<data dir>/sessions`.
pub fn sessions_dir() -> PathBuf {
    crate::paths::data_dir().join("sessions")
}

/// What the listing shows of a readable session.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub title: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub messages: usize,
    pub models: Vec<String>,
    /// What the sessions overlay's filter looks in (`search::filter_text`): read with the
    /// listing, on its thread, so typing never reads a file.
    pub text: String,
}

/// One `.json` file of the sessions directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub path: PathBuf,
    /// The file name without `.json`.
    pub id: String,
    /// The summary, or why the file cannot be read.
    pub summary: Result<Summary, String>,
    /// For ordering: the session's last update, else the file's modification time.
    pub sort_time: u64,
}

impl Summary {
    pub fn of(s: &Session) -> Self {
        Self {
            title: s.display_title(),
            created_at: s.created_at,
            updated_at: s.updated_at,
            messages: s.messages.len(),
            models: s.models().into_iter().map(str::to_string).collect(),
            text: super::search::filter_text(s),
        }
    }
}

/// Reads a file, refusing one over the size cap before reading it whole.
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let file = File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_SESSION_BYTES {
        return Err(SessionError::TooLarge(len).to_string());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // `take` bounds the read even if the file grows meanwhile; parse_session then refuses it.
    file.take(MAX_SESSION_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    Ok(bytes)
}

/// Reads and parses one session file; the error names the file.
pub fn load(path: &Path) -> Result<Session> {
    let bytes = read_bounded(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    parse_session(&bytes).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// The file a session is saved to.
pub fn path_of(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

/// Saves `session` as `<dir>/<id>.json`, atomically. An existing file that cannot be read
/// (a newer version, corrupted) is left alone and the save fails.
pub fn save(dir: &Path, session: &Session) -> Result<PathBuf> {
    if !valid_id(&session.id) {
        bail!("cannot save a session with the id {:?}", session.id);
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the sessions directory {}", dir.display()))?;
    let path = path_of(dir, &session.id);
    if path.exists() {
        if let Err(e) = load(&path) {
            bail!("not overwriting a file taper cannot read: {e:#}");
        }
    }
    write_atomic(&path, &session.to_bytes())?;
    remove_stale_temps(dir);
    Ok(path)
}

/// Replaces `path` with `bytes` so that a crash at any moment leaves either the old file or
/// the new one: write a temporary file in the same directory, fsync it, rename it over
/// `path`, fsync the directory (which makes the rename itself durable).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let fail = |what: &str| format!("cannot save {}: {what}", path.display());
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| fail("cannot create a temporary file"))?;
    temp.write_all(bytes)
        .with_context(|| fail("write failed"))?;
    temp.as_file()
        .sync_all()
        .with_context(|| fail("fsync failed"))?;
    temp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| fail("rename failed"))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| fail("fsync of the directory failed"))?;
    Ok(())
}

/// Best effort: temporary files of saves that were killed, once old enough to be sure.
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(TEMP_PREFIX) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > STALE_TEMP);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A `.json` file of the sessions directory, not yet read.
struct SessionFile {
    path: PathBuf,
    id: String,
    /// Seconds since the epoch (0 if unknown).
    modified: u64,
}

/// The session files of `dir` (not temporary files, not directories), in no order.
fn session_files(dir: &Path) -> Vec<SessionFile> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".json")?.to_string();
            if name.starts_with('.') || !path.is_file() {
                return None;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs());
            Some(SessionFile { path, id, modified })
        })
        .collect()
}

/// The paths of every session file in `dir`, by name; to read them one at a time.
pub fn paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = session_files(dir).into_iter().map(|f| f.path).collect();
    paths.sort();
    paths
}

/// Every session file in `dir`, newest first; unreadable ones are listed with the reason.
pub fn list(dir: &Path) -> Vec<Listed> {
    let mut out: Vec<Listed> = session_files(dir)
        .into_iter()
        .map(|file| {
            let summary = read_bounded(&file.path)
                .and_then(|b| parse_session(&b).map_err(|e| e.to_string()))
                .map(|s| Summary::of(&s));
            let sort_time = summary.as_ref().map_or(file.modified, |s| s.updated_at);
            Listed {
                path: file.path,
                id: file.id,
                summary,
                sort_time,
            }
        })
        .collect();
    out.sort_by(|a, b| b.sort_time.cmp(&a.sort_time).then(b.id.cmp(&a.id)));
    out
}

/// The session file for `arg`: a path to a file, an id, or a unique prefix of one. Without
/// an argument: the most recent readable session.
pub fn resolve(dir: &Path, arg: Option<&str>) -> Result<PathBuf> {
    let listed = list(dir);
    let Some(arg) = arg.filter(|a| !a.is_empty()) else {
        return listed
            .into_iter()
            .find(|l| l.summary.is_ok())
            .map(|l| l.path)
            .ok_or_else(|| anyhow!("no saved sessions in {}", dir.display()));
    };
    let as_path = Path::new(arg);
    if as_path.is_file() {
        return Ok(as_path.to_path_buf());
    }
    if let Some(exact) = listed.iter().find(|l| l.id == arg) {
        return Ok(exact.path.clone());
    }
    let matches: Vec<&Listed> = listed.iter().filter(|l| l.id.starts_with(arg)).collect();
    match matches.as_slice() {
        [one] => Ok(one.path.clone()),
        [] => bail!(
            "no session {arg:?}: not a file, and no id in {} starts with it (`taper sessions` \
             lists them)",
            dir.display()
        ),
        many => {
            let ids: Vec<&str> = many.iter().take(8).map(|l| l.id.as_str()).collect();
            bail!(
                "{arg:?} matches {} sessions ({}); give more of the id",
                many.len(),
                ids.join(", ")
            )
        }
    }
}

/// Gives the session in `path` a new title (an empty one goes back to the first question).
pub fn rename(path: &Path, title: &str) -> Result<()> {
    let mut session = load(path)?;
    session.title = title.trim().to_string();
    write_atomic(path, &session.to_bytes())
}

/// Removes a session file. Only ever called on the user's explicit, confirmed request.
pub fn delete(path: &Path) -> Result<()> {
    std::fs::remove_file(path).with_context(|| format!("cannot delete {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::format::tests::sample;

    #[test]
    fn save_list_resolve_rename_delete() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = sample();
        let path_a = save(dir.path(), &a).unwrap();
        assert_eq!(load(&path_a).unwrap(), a);
        a.id = "20261130-130000-beef".into();
        a.updated_at += 100;
        let path_b = save(dir.path(), &a).unwrap();
        let listed = list(dir.path());
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].path, path_b, "newest first");
        assert_eq!(resolve(dir.path(), None).unwrap(), path_b);
        assert_eq!(resolve(dir.path(), Some("20261130-13")).unwrap(), path_b);
        let msg = resolve(dir.path(), Some("2026")).unwrap_err().to_string();
        assert!(msg.contains("matches 2 sessions"), "{msg}");
        assert!(resolve(dir.path(), Some("nope")).is_err());
        rename(&path_a, "Sums").unwrap();
        assert_eq!(load(&path_a).unwrap().title, "Sums");
        delete(&path_a).unwrap();
        assert_eq!(list(dir.path()).len(), 1);
    }

    #[test]
    fn an_unreadable_file_is_listed_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let s = sample();
        let path = path_of(dir.path(), &s.id);
        let future = String::from_utf8(s.to_bytes()).unwrap().replace(
            &format!("\"version\": {}", crate::sessions::FORMAT_VERSION),
            "\"version\": 9",
        );
        std::fs::write(&path, &future).unwrap();
        let err = save(dir.path(), &s).unwrap_err().to_string();
        assert!(
            err.contains("not overwriting") && err.contains("version 9"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), future);
        let listed = list(dir.path());
        assert!(listed[0]
            .summary
            .as_ref()
            .unwrap_err()
            .contains("newer taper"));
        // Resuming "the most recent" skips it; naming it reports it.
        assert!(resolve(dir.path(), None).is_err());
        let named = resolve(dir.path(), Some(&s.id)).unwrap();
        let err = load(&named).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
    }

    #[test]
    fn temporary_files_are_not_listed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(format!("{TEMP_PREFIX}x.tmp")), b"{").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"hi").unwrap();
        assert!(list(dir.path()).is_empty());
    }
}
