//! Reaching one server: a stdio server spawned in a process group of its own (so `npx` and
//! the node it starts end together), its stderr into its log and its stdout watched; or a
//! Streamable HTTP server with its headers. Then rmcp's `initialize` handshake, and a check
//! that the protocol version the server answered is one taper knows.
//!
//! taper spawns the process itself rather than through rmcp's `TokioChildProcess`: that one
//! keeps the child, and its shutdown waits 3 s after closing stdin and 3 s more after
//! SIGTERM, and kills only the direct child. Owning the child lets shutdown close stdin, give
//! a short grace and then kill the whole group.

use super::config::ServerConfig;
use super::log::ServerLog;
use super::process::Process;
use super::watch::{Oversized, Watched};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, InitializeRequestParams, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// How long a server may take from spawn (or first request) to answering `initialize`:
/// generous, since `npx -y` may download the server first.
pub const START_LIMIT: Duration = Duration::from_secs(120);

/// The protocol versions taper accepts from a server's `initialize` answer: those with the
/// handshake taper speaks.
const KNOWN: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
];

/// taper's side of the session: it tells the host when the server's tools change; rmcp
/// answers `ping` itself.
pub struct Client {
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // The host is gone only while shutting down; nothing left to re-list then.
        let _ = self.list_changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        let me = Implementation::new("taper", env!("CARGO_PKG_VERSION"));
        InitializeRequestParams::new(ClientCapabilities::default(), me)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A server taper is talking to.
pub struct Connection {
    pub service: RunningService<RoleClient, Client>,
    /// A stdio server's process group.
    pub process: Option<Process>,
}

/// What a connection reports besides answers.
pub struct Signals {
    pub list_changed: mpsc::UnboundedReceiver<()>,
    pub oversized: broadcast::Sender<Oversized>,
}

/// Starts `config`'s server and initializes the session; an error is one sentence.
pub async fn connect(
    name: &str,
    config: &ServerConfig,
    log: Option<&ServerLog>,
) -> Result<(Connection, Signals), String> {
    let (changed_tx, list_changed) = mpsc::unbounded_channel();
    let (oversized, _) = broadcast::channel(16);
    let client = Client {
        list_changed: changed_tx,
    };
    let signals = |list_changed| Signals {
        list_changed,
        oversized: oversized.clone(),
    };
    let connection = match (&config.command, &config.url) {
        (Some(command), _) => {
            let log = log
                .cloned()
                .unwrap_or_else(|| ServerLog::create(&super::log::log_path(name)));
            stdio(name, command, config, client, &log, oversized.clone()).await?
        }
        (None, Some(url)) => http(name, url, config, client).await?,
        (None, None) => return Err(format!("`{name}` has neither `command` nor `url`")),
    };
    if let Err(e) = check_version(name, &connection) {
        super::process::stop(connection).await;
        return Err(e);
    }
    Ok((connection, signals(list_changed)))
}

async fn stdio(
    name: &str,
    command: &str,
    config: &ServerConfig,
    client: Client,
    log: &ServerLog,
    oversized: broadcast::Sender<Oversized>,
) -> Result<Connection, String> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&config.args)
        .envs(config.env.iter().map(|(k, v)| (k, v.expose())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    if let Some(cwd) = &config.cwd {
        cmd.current_dir(crate::paths::expand_home(cwd));
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("`{name}` cannot start `{command}`: {e}"))?;
    let mut process = Process::new(child);
    let child = &mut process.child;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!(
            "`{name}`: the server's stdio could not be connected"
        ));
    };
    tokio::spawn(log.clone().drain(stderr));
    let reader = Watched::new(stdout, log.clone(), oversized);
    let transport = AsyncRwTransport::new_client(reader, stdin);
    match tokio::time::timeout(START_LIMIT, client.serve(transport)).await {
        Ok(Ok(service)) => Ok(Connection {
            service,
            process: Some(process),
        }),
        Ok(Err(e)) => {
            // A server that died at once says more by its exit status than by the closed pipe.
            let exited = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
            process.kill().await;
            Err(match exited {
                Ok(Ok(status)) => format!("`{name}` exited before it was ready ({status})"),
                _ => format!(
                    "`{name}` failed to initialize: {}",
                    one_line(&e.to_string())
                ),
            })
        }
        Err(_) => {
            process.kill().await;
            Err(format!(
                "`{name}` did not answer `initialize` within {} s (is it an MCP server?)",
                START_LIMIT.as_secs()
            ))
        }
    }
}

async fn http(
    name: &str,
    url: &str,
    config: &ServerConfig,
    client: Client,
) -> Result<Connection, String> {
    // reqwest is built without a TLS crypto provider of its own; ring is the one taper has.
    // Installing fails only when one is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut headers = HashMap::new();
    for (key, value) in &config.headers {
        let bad = || format!("`{name}`: header {key:?} is not valid in HTTP");
        let key = http::HeaderName::from_bytes(key.as_bytes()).map_err(|_| bad())?;
        let value = http::HeaderValue::from_str(value.expose()).map_err(|_| bad())?;
        headers.insert(key, value);
    }
    let transport_config =
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    let transport = StreamableHttpClientTransport::from_config(transport_config);
    match tokio::time::timeout(START_LIMIT, client.serve(transport)).await {
        Ok(Ok(service)) => Ok(Connection {
            service,
            process: None,
        }),
        Ok(Err(e)) => Err(format!(
            "`{name}` at {url} failed to initialize: {}",
            one_line(&e.to_string())
        )),
        Err(_) => Err(format!(
            "`{name}` at {url} did not answer `initialize` within {} s",
            START_LIMIT.as_secs()
        )),
    }
}

fn check_version(name: &str, connection: &Connection) -> Result<(), String> {
    let version = connection
        .service
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.clone());
    match version {
        Some(v) if KNOWN.contains(&v) => Ok(()),
        Some(v) => Err(format!(
            "`{name}` speaks MCP version {v}, which taper does not know (it knows {} to {})",
            KNOWN[0],
            KNOWN[KNOWN.len() - 1]
        )),
        None => Err(format!("`{name}` did not say which MCP version it speaks")),
    }
}

/// An error's text on one line (rmcp's errors may carry a server's multi-line message).
pub fn one_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let (cut, _) = super::content::bound(line, 300);
    cut
}
