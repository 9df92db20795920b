//! Ending a server: close the session (a stdio server sees its stdin close, as the MCP spec's
//! shutdown asks), a short grace to exit on its own, then SIGKILL to its whole process group,
//! so no server outlives taper, nor any process it started (`npx` runs node as a child).

use super::connect::Connection;
use std::time::Duration;
use tokio::process::Child;

/// How long a server has to exit after its stdin closes.
pub const GRACE: Duration = Duration::from_millis(800);

/// A spawned server: the child and its process group (the child leads it: spawned with
/// `process_group(0)`, so the group id is its pid).
pub struct Process {
    pub child: Child,
    group: Option<i32>,
}

impl Process {
    pub fn new(child: Child) -> Self {
        let group = child.id().and_then(|pid| i32::try_from(pid).ok());
        Self { child, group }
    }

    /// Kills the group and reaps the child.
    pub async fn kill(&mut self) {
        if let Some(group) = self.group {
            // SAFETY: killpg only sends a signal; an already empty group gives ESRCH, ignored.
            unsafe {
                libc::killpg(group, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
        // SIGKILL cannot be ignored: the wait is short; bounded all the same.
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
    }
}

/// Ends a connection: the session closed, stdin with it; the process given `GRACE` to exit,
/// then its group killed (also when it did exit: what it started may live on).
pub async fn stop(connection: Connection) {
    let Connection { service, process } = connection;
    // rmcp's cancel ends its loop and closes the transport (stdin, or the HTTP session).
    let _ = tokio::time::timeout(GRACE, service.cancel()).await;
    if let Some(mut process) = process {
        let _ = tokio::time::timeout(GRACE, process.child.wait()).await;
        process.kill().await;
    }
}
