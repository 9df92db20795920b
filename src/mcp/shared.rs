//! What the MCP thread and its callers share: one slot per configured server (its status,
//! its session's peer while ready), the running calls' cancel switches, and the event
//! channel. Every change of a server's state goes through here, so the status, the event
//! and the wake-up of `wait_ready` always go together.

use super::config::ServerConfig;
use super::types::{ServerState, ServerStatus, ToolEvent, ToolInfo};
use super::watch::Oversized;
use rmcp::service::Peer;
use rmcp::RoleClient;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};

pub struct Shared {
    slots: Mutex<Vec<Slot>>,
    changed: Condvar,
    /// Cancel switches of the calls running, by call id.
    pub calls: Mutex<HashMap<String, oneshot::Sender<()>>>,
    pub events: mpsc::UnboundedSender<ToolEvent>,
    pub max_chars: usize,
}

pub struct Slot {
    pub status: ServerStatus,
    pub config: ServerConfig,
    pub timeout: Duration,
    /// The session, while the server is ready.
    pub peer: Option<Peer<RoleClient>>,
    /// Where a stdio server's watcher reports messages too large to read.
    pub oversized: Option<broadcast::Sender<Oversized>>,
}

/// What a call needs of its server.
pub struct Session {
    pub peer: Peer<RoleClient>,
    pub timeout: Duration,
    pub oversized: Option<broadcast::Receiver<Oversized>>,
}

impl Shared {
    pub fn new(
        slots: Vec<Slot>,
        events: mpsc::UnboundedSender<ToolEvent>,
        max_chars: usize,
    ) -> Self {
        Self {
            slots: Mutex::new(slots),
            changed: Condvar::new(),
            calls: Mutex::new(HashMap::new()),
            events,
            max_chars,
        }
    }

    pub fn slots(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn calls(&self) -> MutexGuard<'_, HashMap<String, oneshot::Sender<()>>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends an event; a receiver that is gone (its user quit) is no error.
    pub fn emit(&self, event: ToolEvent) {
        let _ = self.events.send(event);
    }

    /// The server is ready with these tools.
    pub fn ready(
        &self,
        index: usize,
        peer: Peer<RoleClient>,
        tools: Vec<ToolInfo>,
        oversized: Option<broadcast::Sender<Oversized>>,
    ) {
        let (server, count) = {
            let mut slots = self.slots();
            let slot = &mut slots[index];
            slot.status.state = ServerState::Ready;
            slot.status.tools = tools;
            slot.peer = Some(peer);
            slot.oversized = oversized;
            (slot.status.name.clone(), slot.status.tools.len())
        };
        self.changed.notify_all();
        self.emit(ToolEvent::ServerReady {
            server,
            tools: count,
        });
    }

    /// The server's tools changed.
    pub fn tools_changed(&self, index: usize, tools: Vec<ToolInfo>) {
        let server = {
            let mut slots = self.slots();
            slots[index].status.tools = tools;
            slots[index].status.name.clone()
        };
        self.emit(ToolEvent::ToolsChanged { server });
    }

    /// The server could not start, or stopped: `message` says why.
    pub fn failed(&self, index: usize, message: String) {
        let server = {
            let mut slots = self.slots();
            let slot = &mut slots[index];
            slot.status.state = ServerState::Failed(message.clone());
            slot.peer = None;
            slot.oversized = None;
            slot.status.name.clone()
        };
        self.changed.notify_all();
        self.emit(ToolEvent::ServerFailed { server, message });
    }

    /// The session a call of server `index` uses, or why there is none.
    pub fn session(&self, index: usize) -> Result<Session, String> {
        let slots = self.slots();
        let slot = &slots[index];
        let name = &slot.status.name;
        match (&slot.status.state, &slot.peer) {
            (ServerState::Ready, Some(peer)) => Ok(Session {
                peer: peer.clone(),
                timeout: slot.timeout,
                oversized: slot.oversized.as_ref().map(broadcast::Sender::subscribe),
            }),
            (ServerState::Failed(why), _) => {
                Err(format!("MCP server `{name}` is not running: {why}"))
            }
            (ServerState::Disabled, _) => {
                Err(format!("MCP server `{name}` is disabled in the config"))
            }
            _ => Err(format!("MCP server `{name}` is still starting")),
        }
    }

    /// The failure sentence of server `index`, waiting up to `limit` for it to be known (a
    /// call sees the pipe close a moment before the server's exit is recorded). Polled: it
    /// runs on the MCP thread, whose server tasks record that exit.
    pub async fn failure_of(&self, index: usize, limit: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let ServerState::Failed(why) = &self.slots()[index].status.state {
                return Some(why.clone());
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until no enabled server (or only server `only`) is starting, or `limit` passed.
    pub fn wait_settled(&self, limit: Duration, only: Option<usize>) {
        let slots = self.slots();
        let starting = |s: &mut Vec<Slot>| {
            s.iter()
                .enumerate()
                .filter(|(i, _)| only.is_none_or(|o| o == *i))
                .any(|(_, slot)| slot.status.state == ServerState::Starting)
        };
        let _ = self.changed.wait_timeout_while(slots, limit, starting);
    }
}
