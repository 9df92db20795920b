//! One server's life on the MCP thread: connect, list its tools (every page), then wait for
//! one of three things: its tools changed (list them again), it died (record why), or taper
//! is shutting down (end it, its processes with it).

use super::connect::{connect, one_line, Connection};
use super::log::ServerLog;
use super::shared::Shared;
use super::types::ToolInfo;
use rmcp::model::PaginatedRequestParams;
use rmcp::service::Peer;
use rmcp::RoleClient;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// More pages than any real server has; a server paging past it is broken.
const MAX_PAGES: usize = 1000;

pub async fn run(
    shared: Arc<Shared>,
    index: usize,
    log: Option<PathBuf>,
    mut stop: watch::Receiver<bool>,
) {
    let (name, config, timeout) = {
        let slots = shared.slots();
        let slot = &slots[index];
        (slot.status.name.clone(), slot.config.clone(), slot.timeout)
    };
    let log = log.map(|path| ServerLog::create(&path));
    let connected = tokio::select! {
        c = connect(&name, &config, log.as_ref()) => c,
        _ = stopped(&mut stop) => return,
    };
    let (connection, mut signals) = match connected {
        Ok(c) => c,
        Err(message) => return shared.failed(index, message),
    };
    let peer = connection.service.peer().clone();
    match list_tools(&peer, timeout).await {
        Ok(tools) => shared.ready(index, peer.clone(), tools, Some(signals.oversized.clone())),
        Err(e) => {
            super::process::stop(connection).await;
            return shared.failed(index, format!("`{name}` could not list its tools: {e}"));
        }
    }
    let Connection {
        service,
        mut process,
    } = connection;
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let reason = loop {
        tokio::select! {
            _ = stopped(&mut stop) => {
                super::process::stop(Connection { service, process }).await;
                return;
            }
            Some(()) = signals.list_changed.recv() => {
                match list_tools(&peer, timeout).await {
                    Ok(tools) => shared.tools_changed(index, tools),
                    Err(e) => if let Some(l) = &log { l.note(&format!("listing the changed tools failed: {e}")) },
                }
            }
            status = async {
                match process.as_mut() {
                    Some(p) => p.child.wait().await.ok(),
                    None => std::future::pending().await,
                }
            } => {
                let how = status.map_or("exited".to_string(), |s| format!("exited ({s})"));
                break how;
            }
            _ = tick.tick() => {
                if service.is_closed() {
                    break "closed the connection".to_string();
                }
            }
        }
    };
    let log_hint = log_hint(&shared, index);
    shared.failed(index, format!("`{name}` {reason}{log_hint}"));
    super::process::stop(Connection { service, process }).await;
}

/// Resolves once taper shuts the servers down.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // An error means the host is gone: as good as a stop.
    let _ = stop.wait_for(|s| *s).await;
}

/// `; its log: PATH` for a server that has one.
fn log_hint(shared: &Shared, index: usize) -> String {
    let slots = shared.slots();
    match &slots[index].status.log {
        Some(path) => format!("; its log: {}", path.display()),
        None => String::new(),
    }
}

/// Every tool of the server, following `nextCursor` to the last page. A server that does
/// not offer tools has none (asking would be refused).
async fn list_tools(peer: &Peer<RoleClient>, limit: Duration) -> Result<Vec<ToolInfo>, String> {
    let offers_tools = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.tools.is_some());
    if !offers_tools {
        return Ok(Vec::new());
    }
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
        let page = tokio::time::timeout(limit, peer.list_tools(Some(params)))
            .await
            .map_err(|_| format!("no answer to tools/list within {} s", limit.as_secs()))?
            .map_err(|e| one_line(&e.to_string()))?;
        tools.extend(page.tools.into_iter().map(|t| ToolInfo {
            name: t.name.to_string(),
            description: t.description.map(|d| d.to_string()),
            input_schema: serde_json::Value::Object((*t.input_schema).clone()),
        }));
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) if !seen.insert(next.clone()) => {
                return Err(format!("tools/list gave the cursor {next:?} twice"));
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(format!("tools/list went on past {MAX_PAGES} pages"))
}
