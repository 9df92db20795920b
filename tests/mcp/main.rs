//! The MCP client's tests in one binary: the config, the client against servers written with
//! the official Python `mcp` package (`servers/pyserver.py`: friendly and hostile tools), the
//! reference server `@modelcontextprotocol/server-everything` over stdio and Streamable HTTP,
//! and `taper mcp list` / `taper mcp call` as the real binary. Python and npm packages are
//! installed once per machine into caches outside the repository.

#[path = "../support/venv.rs"]
mod venv;

mod cli;
mod config;
mod everything;
mod hostile;
mod python;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use taper::mcp::{McpConfig, ServerConfig, ToolEvent, ToolHost, ToolResult};
use tokio::sync::mpsc::UnboundedReceiver;

/// A generous bound on anything the tests wait for; nothing asserts how fast it came.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// `TAPER_HOME` for every host of this process (server logs go under it), set once before
/// any test starts a host.
pub fn taper_home() -> PathBuf {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("taper-mcp-test")
            .tempdir()
            .expect("temp dir")
            .keep();
        std::env::set_var("TAPER_HOME", &dir);
        dir
    })
    .clone()
}

/// The python of `~/.cache/taper-test-mcp-venv`, with the official `mcp` package pinned.
pub fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| venv::venv_python("taper-test-mcp-venv", &["mcp==2.3.0"], "mcp"))
        .clone()
}

/// A stdio server running `servers/pyserver.py ARGS`.
pub fn py_server(args: &[&str]) -> ServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/servers/pyserver.py");
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    ServerConfig {
        command: Some(python().display().to_string()),
        args: all,
        ..ServerConfig::default()
    }
}

/// A host of these servers, started and settled.
pub fn start(servers: Vec<(&str, ServerConfig)>) -> (ToolHost, UnboundedReceiver<ToolEvent>) {
    start_with(servers, |_| {})
}

pub fn start_with(
    servers: Vec<(&str, ServerConfig)>,
    tweak: impl FnOnce(&mut McpConfig),
) -> (ToolHost, UnboundedReceiver<ToolEvent>) {
    taper_home();
    let mut config = McpConfig::default();
    for (name, server) in servers {
        config.servers.insert(name.to_string(), server);
    }
    tweak(&mut config);
    let (host, events) = ToolHost::start(&config);
    host.wait_ready(PATIENCE);
    (host, events)
}

/// The first event `wanted` picks, waiting up to `PATIENCE`; other events are passed over.
pub fn event<T>(
    events: &mut UnboundedReceiver<ToolEvent>,
    mut wanted: impl FnMut(ToolEvent) -> Option<T>,
) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match events.try_recv() {
            Ok(e) => {
                if let Some(t) = wanted(e) {
                    return t;
                }
            }
            Err(_) => {
                assert!(
                    Instant::now() < deadline,
                    "no such event within {PATIENCE:?}"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// The result of call `id`.
pub fn call_done(events: &mut UnboundedReceiver<ToolEvent>, id: &str) -> ToolResult {
    event(events, |e| match e {
        ToolEvent::CallDone { call_id, result } if call_id == id => Some(result),
        _ => None,
    })
}

/// `result` is an error result whose sentence holds `words`.
pub fn assert_error(result: &ToolResult, words: &str) {
    assert!(
        result.is_error && result.text.contains(words),
        "expected an error saying {words:?}, got {result:?}"
    );
}

/// Whether process `pid` is gone (or a zombie about to be).
pub fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// The pids whose command line holds `needle`.
pub fn pids_with(needle: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .filter(|&pid| !gone(pid))
        .collect()
}
