//! `ToolHost`: the MCP servers run on a thread of their own (`taper-mcp`) with a
//! current-thread tokio runtime; the handle is usable from sync code and from the chat's own
//! runtime alike, since it only locks the shared state and spawns onto that runtime. Results
//! and server changes come back as `ToolEvent`s on an unbounded channel.

use super::config::McpConfig;
use super::shared::{Shared, Slot};
use super::types::{OfferedTool, ServerState, ServerStatus, ToolEvent, ToolResult};
use super::{call, offer, server};
use rmcp::model::JsonObject;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot, watch};

/// The MCP servers of the config and their tools. Clone it freely: clones share one host.
#[derive(Clone)]
pub struct ToolHost {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    /// The MCP thread's runtime; none when no server is enabled (nothing is started then).
    runtime: Option<Handle>,
    stop: watch::Sender<bool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl ToolHost {
    /// Starts every enabled server in the background; returns at once. Events arrive on the
    /// receiver.
    pub fn start(config: &McpConfig) -> (ToolHost, mpsc::UnboundedReceiver<ToolEvent>) {
        let (events, receiver) = mpsc::unbounded_channel();
        let slots: Vec<Slot> = config
            .all_servers()
            .into_iter()
            .map(|(name, server)| Slot {
                status: ServerStatus {
                    state: if server.enabled() {
                        ServerState::Starting
                    } else {
                        ServerState::Disabled
                    },
                    tools: Vec::new(),
                    log: server
                        .command
                        .is_some()
                        .then(|| super::log::log_path(&name)),
                    transport: server.transport(),
                    name,
                },
                timeout: config.timeout(&server),
                config: server,
                peer: None,
                oversized: None,
            })
            .collect();
        let shared = Arc::new(Shared::new(slots, events, config.max_result_chars()));
        let (stop, _) = watch::channel(false);
        let mut inner = Inner {
            shared: shared.clone(),
            runtime: None,
            stop,
            thread: Mutex::new(None),
        };
        let enabled: Vec<usize> = {
            let slots = shared.slots();
            (0..slots.len())
                .filter(|&i| slots[i].status.state == ServerState::Starting)
                .collect()
        };
        if !enabled.is_empty() {
            match spawn_thread(&shared, &enabled, &inner.stop) {
                Ok((handle, thread)) => {
                    inner.runtime = Some(handle);
                    inner.thread = Mutex::new(Some(thread));
                }
                Err(e) => {
                    for i in enabled {
                        shared.failed(i, format!("the MCP thread could not start: {e}"));
                    }
                }
            }
        }
        let host = ToolHost {
            inner: Arc::new(inner),
        };
        (host, receiver)
    }

    /// Blocks until every enabled server is ready or failed, or `limit` passed.
    pub fn wait_ready(&self, limit: Duration) {
        self.inner.shared.wait_settled(limit, None);
    }

    /// Each configured server: name, state, tools, log file.
    pub fn servers(&self) -> Vec<ServerStatus> {
        let slots = self.inner.shared.slots();
        slots.iter().map(|s| s.status.clone()).collect()
    }

    /// The tools offered to the model: the enabled tools of the ready servers, with names
    /// unique across servers (a tool's own name; `SERVER_TOOL` when two servers share it).
    /// Sorted, stable.
    pub fn offered(&self) -> Vec<OfferedTool> {
        let slots = self.inner.shared.slots();
        let ready: Vec<offer::Ready> = slots
            .iter()
            .filter(|s| s.status.state == ServerState::Ready)
            .map(|s| offer::Ready {
                server: &s.status.name,
                config: &s.config,
                tools: &s.status.tools,
            })
            .collect();
        offer::offered(&ready)
    }

    /// Runs one call in the background; `ToolEvent::CallDone { call_id, .. }` reports it.
    /// `name` is an offered name; `arguments` the model's JSON text (bad JSON or a non-object
    /// is an error result and no call is made; empty text is `{}`). A tool whose approval is
    /// `never` is refused here too.
    pub fn call(&self, call_id: &str, name: &str, arguments: &str) {
        let shared = self.inner.shared.clone();
        let done = |result: ToolResult| {
            shared.emit(ToolEvent::CallDone {
                call_id: call_id.to_string(),
                result,
            })
        };
        let Some(tool) = self.offered().into_iter().find(|t| t.name == name) else {
            return done(ToolResult::failure(
                format!("there is no tool named `{name}`"),
                Duration::ZERO,
            ));
        };
        if tool.approval == super::Approval::Never {
            return done(ToolResult::failure(
                format!("calls of `{name}` are refused by the config (approve = \"never\")"),
                Duration::ZERO,
            ));
        }
        let arguments = match parse_arguments(arguments) {
            Ok(a) => a,
            Err(why) => return done(ToolResult::failure(why, Duration::ZERO)),
        };
        let Some(index) = self.index_of(&tool.server) else {
            return done(ToolResult::failure(
                format!("there is no MCP server named `{}`", tool.server),
                Duration::ZERO,
            ));
        };
        if let Err(why) = self.inner.shared.session(index) {
            return done(ToolResult::failure(why, Duration::ZERO));
        }
        let (cancel, cancelled) = oneshot::channel();
        self.inner
            .shared
            .calls()
            .insert(call_id.to_string(), cancel);
        let call_id = call_id.to_string();
        self.spawn(async move {
            let result = call::run(shared.clone(), index, tool.tool, arguments, cancelled).await;
            shared.calls().remove(&call_id);
            shared.emit(ToolEvent::CallDone { call_id, result });
        });
    }

    /// Cancels a running call (`notifications/cancelled` is sent; `CallDone` comes with a
    /// "cancelled" error result). An unknown or finished call is left alone.
    pub fn cancel(&self, call_id: &str) {
        if let Some(cancel) = self.inner.shared.calls().remove(call_id) {
            let _ = cancel.send(());
        }
    }

    /// One call, waiting for its result (for `taper mcp call` and `taper ask`): by server and
    /// the server's tool name. A server still starting is waited for.
    pub fn call_blocking(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
    ) -> ToolResult {
        let started = Instant::now();
        let fail = |text: String| ToolResult::failure(text, started.elapsed());
        let Some(index) = self.index_of(server) else {
            let names: Vec<String> = self.servers().into_iter().map(|s| s.name).collect();
            return fail(format!(
                "there is no MCP server named `{server}` (configured: {})",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            ));
        };
        let serde_json::Value::Object(arguments) = arguments else {
            return fail("the arguments must be a JSON object".into());
        };
        self.inner
            .shared
            .wait_settled(super::connect::START_LIMIT, Some(index));
        let known = {
            let slots = self.inner.shared.slots();
            let status = &slots[index].status;
            let ready = status.state == ServerState::Ready;
            (!ready || status.tools.iter().any(|t| t.name == tool))
                .then_some(())
                .ok_or_else(|| {
                    let names: Vec<&str> = status.tools.iter().map(|t| t.name.as_str()).collect();
                    format!(
                        "`{server}` has no tool `{tool}` (it has: {})",
                        names.join(", ")
                    )
                })
        };
        if let Err(why) = known.and_then(|()| self.inner.shared.session(index).map(drop)) {
            return fail(why);
        }
        let (result_tx, result_rx) = std::sync::mpsc::channel();
        let (_keep, cancelled) = oneshot::channel::<()>();
        let shared = self.inner.shared.clone();
        let tool = tool.to_string();
        self.spawn(async move {
            let result = call::run(shared, index, tool, arguments, cancelled).await;
            let _ = result_tx.send(result);
        });
        result_rx
            .recv()
            .unwrap_or_else(|_| fail("the MCP thread has stopped".into()))
    }

    /// Ends every server (their processes are gone when it returns, within a couple of
    /// seconds). Later calls fail with a sentence.
    pub fn shutdown(&self) {
        self.inner.shutdown();
    }

    fn index_of(&self, server: &str) -> Option<usize> {
        let slots = self.inner.shared.slots();
        slots.iter().position(|s| s.status.name == server)
    }

    /// Runs `task` on the MCP thread. Callers first check that the server has a session, which
    /// it never has without a running thread; after shutdown the task is dropped.
    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        if let Some(runtime) = &self.inner.runtime {
            if !*self.inner.stop.borrow() {
                runtime.spawn(task);
            }
        }
    }
}

impl Inner {
    fn shutdown(&self) {
        self.stop.send_replace(true);
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        for slot in self.shared.slots().iter_mut() {
            if matches!(
                slot.status.state,
                ServerState::Ready | ServerState::Starting
            ) {
                slot.status.state =
                    ServerState::Failed("stopped: taper shut the MCP servers down".into());
                slot.peer = None;
            }
        }
    }
}

impl Drop for Inner {
    /// The last handle gone without `shutdown`: the servers are ended all the same.
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The MCP thread: its runtime runs one task per server until `stop` turns true, then waits
/// for every server to end.
fn spawn_thread(
    shared: &Arc<Shared>,
    enabled: &[usize],
    stop: &watch::Sender<bool>,
) -> std::io::Result<(Handle, JoinHandle<()>)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let handle = runtime.handle().clone();
    let tasks: Vec<_> = enabled
        .iter()
        .map(|&i| {
            let log = shared.slots()[i].status.log.clone();
            server::run(shared.clone(), i, log, stop.subscribe())
        })
        .collect();
    let mut stopped = stop.subscribe();
    let thread = std::thread::Builder::new()
        .name("taper-mcp".into())
        .spawn(move || {
            // The runtime lives until shutdown, for calls, also when every server failed.
            runtime.block_on(async move {
                let running: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
                let _ = stopped.wait_for(|s| *s).await;
                for task in running {
                    let _ = task.await;
                }
            });
        })?;
    Ok((handle, thread))
}

/// The model's arguments text as a JSON object (empty text is `{}`: small models often
/// send nothing for a tool without parameters).
fn parse_arguments(text: &str) -> Result<JsonObject, String> {
    if text.trim().is_empty() {
        return Ok(JsonObject::new());
    }
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err("the arguments must be a JSON object".into()),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}
