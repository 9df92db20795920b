//! The reference server `@modelcontextprotocol/server-everything` (npm, pinned; installed once
//! per machine into `~/.cache/taper-test-npm`), over stdio and over Streamable HTTP.

use crate::{gone, start, PATIENCE};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use taper::mcp::{ServerConfig, ServerState};

/// The pinned version: the newest there is as this is written, and it runs on Debian's
/// Node 20.
const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// The server's `dist/index.js`, installed on first use.
fn everything_js() -> PathBuf {
    static JS: OnceLock<PathBuf> = OnceLock::new();
    JS.get_or_init(|| {
        let home = std::env::var_os("HOME").expect("HOME");
        let dir = PathBuf::from(home).join(".cache/taper-test-npm");
        let js = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let version = dir.join("node_modules/@modelcontextprotocol/server-everything/package.json");
        let pinned = std::fs::read_to_string(&version).is_ok_and(|p| {
            p.contains(&format!(
                "\"version\": \"{}\"",
                &PACKAGE[PACKAGE.rfind('@').unwrap() + 1..]
            ))
        });
        if !pinned {
            std::fs::create_dir_all(&dir).unwrap();
            let installed = Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", PACKAGE])
                .current_dir(&dir)
                .status()
                .expect("npm (scripts/test installs Debian's nodejs and npm)");
            assert!(installed.success(), "npm install {PACKAGE} failed");
        }
        assert!(
            js.is_file(),
            "{} is missing after npm install",
            js.display()
        );
        js
    })
    .clone()
}

/// The stdio server; `token` (ignored by it) marks its command line for the process checks.
fn stdio_server(token: &str) -> ServerConfig {
    ServerConfig {
        command: Some("node".into()),
        args: vec![
            everything_js().display().to_string(),
            "stdio".into(),
            token.into(),
        ],
        ..ServerConfig::default()
    }
}

#[test]
fn the_reference_server_over_stdio_lists_its_tools_and_answers_calls() {
    let (host, _events) = start(vec![("everything", stdio_server("everything-1"))]);
    let status = &host.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    let names: Vec<&str> = status.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );
    let echo = host.call_blocking("everything", "echo", serde_json::json!({"message": "hi"}));
    assert_eq!((echo.text.as_str(), echo.is_error), ("Echo: hi", false));
    let sum = host.call_blocking("everything", "get-sum", serde_json::json!({"a": 2, "b": 3}));
    assert!(!sum.is_error && sum.text.contains('5'), "{sum:?}");
    let image = host.call_blocking("everything", "get-tiny-image", serde_json::json!({}));
    assert!(image.text.contains("[image image/png"), "{}", image.text);
    // The offered name of a tool with a dash stays as it is (dashes are allowed).
    assert!(host.offered().iter().any(|t| t.name == "get-sum"));
    host.shutdown();
}

/// A port no one listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The HTTP server, killed when dropped.
struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_reference_server_over_streamable_http_answers_calls() {
    let port = free_port();
    let child = Command::new("node")
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node");
    let server = HttpServer(child);
    let deadline = Instant::now() + PATIENCE;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut config = ServerConfig {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        ..ServerConfig::default()
    };
    config.headers.insert(
        "X-Taper-Test".into(),
        taper::remote::Secret::new("header-value"),
    );
    let (host, _events) = start(vec![("remote-everything", config)]);
    let status = &host.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert_eq!(
        (status.log.as_ref(), status.transport.as_str()),
        (None, &*format!("http://127.0.0.1:{port}/mcp"))
    );
    let echo = host.call_blocking(
        "remote-everything",
        "echo",
        serde_json::json!({"message": "over http"}),
    );
    assert_eq!(
        (echo.text.as_str(), echo.is_error),
        ("Echo: over http", false)
    );
    host.shutdown();
    drop(server);
}

#[test]
fn an_http_server_that_is_not_there_fails_with_a_sentence() {
    let config = ServerConfig {
        url: Some(format!("http://127.0.0.1:{}/mcp", free_port())),
        ..ServerConfig::default()
    };
    let (host, _events) = start(vec![("nowhere", config)]);
    let ServerState::Failed(why) = &host.servers()[0].state else {
        panic!("{:?}", host.servers());
    };
    assert!(
        why.starts_with("`nowhere` at http://127.0.0.1:") && !why.contains('\n'),
        "{why}"
    );
    host.shutdown();
}

#[test]
fn shutdown_ends_the_server_process() {
    let (host, _events) = start(vec![("ending", stdio_server("ending-token-93"))]);
    let pids = crate::pids_with("ending-token-93");
    assert_eq!(pids.len(), 1, "{pids:?}");
    host.shutdown();
    assert!(pids.iter().all(|&p| gone(p)), "left running: {pids:?}");
}
