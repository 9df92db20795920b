//! A stdio server's log file (`DATA_DIR/logs/mcp-NAME.log`): its stderr, and what it wrote to
//! stdout that was not a message. Bounded: after `LIMIT` bytes one last line says the rest is
//! dropped, and the server's output is still read (and thrown away), so a server that floods
//! stderr neither blocks on a full pipe nor grows the file without end.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The most bytes a log keeps of one run of a server.
pub const LIMIT: u64 = 1024 * 1024;

/// The log file of one server; cheap to clone, shared by the stderr reader and stdout watcher.
#[derive(Clone)]
pub struct ServerLog {
    inner: Arc<Mutex<LogFile>>,
}

struct LogFile {
    file: Option<File>,
    written: u64,
    full: bool,
}

/// Where server `name`'s log goes.
pub fn log_path(name: &str) -> PathBuf {
    crate::paths::data_dir()
        .join("logs")
        .join(format!("mcp-{name}.log"))
}

impl ServerLog {
    /// Starts the log afresh (each start of the server truncates it); without a writable
    /// file the output is still drained, only not kept.
    pub fn create(path: &Path) -> Self {
        let file = path
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .ok()
            .and_then(|_| File::create(path).ok());
        Self {
            inner: Arc::new(Mutex::new(LogFile {
                file,
                written: 0,
                full: false,
            })),
        }
    }

    /// Appends `bytes`, up to the limit.
    pub fn write(&self, bytes: &[u8]) {
        let mut log = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let log = &mut *log;
        let Some(file) = log.file.as_mut() else {
            return;
        };
        if log.full {
            return;
        }
        let room = LIMIT.saturating_sub(log.written);
        let take = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        // A failed write (disk full) is not the server's failure: the log just stops.
        let _ = file.write_all(&bytes[..take]);
        log.written += take as u64;
        if take < bytes.len() {
            let _ = writeln!(
                file,
                "\n[taper: this log reached {} KiB; the server's further output is dropped]",
                LIMIT / 1024
            );
            log.full = true;
        }
    }

    /// One line of taper's own about the server (a line on stdout that was not a message).
    pub fn note(&self, line: &str) {
        self.write(format!("[taper: {line}]\n").as_bytes());
    }

    /// Copies `stream` (the server's stderr) into the log until it closes.
    pub async fn drain(self, mut stream: impl AsyncRead + Unpin) {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
            self.write(&buf[..n]);
        }
    }
}
