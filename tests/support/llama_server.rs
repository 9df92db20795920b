//! A real llama-server (llama.cpp, built by `scripts/llama-cpp` from llama-cpp-python
//! 0.3.36's vendored source) on a free loopback port with the SmolLM2 test model, for the
//! remote-model tests. `TAPER_LLAMA_CPP_BIN` names its bin folder (`scripts/test` sets it).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The model name the server is started with (`--alias`).
pub const ALIAS: &str = "smollm2";
/// The server's context.
pub const CONTEXT: usize = 2048;

pub struct LlamaServer {
    child: Child,
    pub root: String,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

/// The llama-server binary; panics with the fix when it has not been built.
pub fn binary() -> PathBuf {
    let bin = std::env::var_os("TAPER_LLAMA_CPP_BIN").map(PathBuf::from);
    let path = bin.map(|b| b.join("llama-server"));
    match path {
        Some(p) if p.is_file() => p,
        _ => panic!(
            "llama-server is missing: set TAPER_LLAMA_CPP_BIN to the folder \
             `scripts/llama-cpp llama-server` prints (scripts/test does this)"
        ),
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    listener.local_addr().expect("address").port()
}

impl LlamaServer {
    /// Starts the server and waits (at most two minutes) until it answers `/health`.
    pub fn start(model: &std::path::Path) -> Self {
        Self::start_with(model, &[])
    }

    /// Like [`LlamaServer::start`], with `extra` flags after the usual ones.
    pub fn start_with(model: &std::path::Path, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("llama-server.log");
        let port = free_port();
        let child = Command::new(binary())
            .args(["-m", &model.display().to_string(), "--alias", ALIAS])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", &CONTEXT.to_string(), "-np", "1", "-t", "2"])
            .args(extra)
            // Templates that print today's date (`strftime_now`) get it in local time from
            // llama.cpp and in UTC from taper; in UTC both name the same day.
            .env("TZ", "UTC")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start llama-server");
        let mut server = Self {
            child,
            root: format!("http://127.0.0.1:{port}"),
            log,
            _dir: dir,
        };
        server.wait_healthy();
        server
    }

    fn wait_healthy(&mut self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(120) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("llama-server exited ({status}): {}", self.log_text());
            }
            let health = ureq::get(&format!("{}/health", self.root))
                .timeout(Duration::from_secs(2))
                .call();
            if health.is_ok() {
                return;
            }
            // Short: the tests that start one server per template wait here each time.
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("llama-server did not become healthy: {}", self.log_text());
    }

    pub fn url(&self) -> String {
        format!("{}/v1", self.root)
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The server's one slot: whether it is generating, and tokens decoded so far.
    pub fn slot(&self) -> (bool, u64) {
        let v: serde_json::Value = ureq::get(&format!("{}/slots", self.root))
            .timeout(Duration::from_secs(10))
            .call()
            .expect("GET /slots")
            .into_string()
            .map(|t| serde_json::from_str(&t).expect("slots JSON"))
            .expect("read /slots");
        let slot = &v[0];
        let decoded = slot["next_token"][0]["n_decoded"].as_u64().unwrap_or(0);
        (slot["is_processing"].as_bool().unwrap_or(false), decoded)
    }

    /// A greedy answer straight from the server (no stream), to compare taper's with. The
    /// whole prompt is computed afresh, as it was for taper's request to a fresh server: a
    /// cached prefix changes llama.cpp's batches, and with them the last bits of its logits.
    pub fn direct_answer(&self, messages: serde_json::Value, max_tokens: usize) -> String {
        let body = serde_json::json!({
            "model": ALIAS, "messages": messages, "max_tokens": max_tokens,
            "temperature": 0.0, "repeat_penalty": 1.0, "stream": false,
            "cache_prompt": false,
        });
        let v: serde_json::Value = ureq::post(&format!("{}/chat/completions", self.url()))
            .timeout(Duration::from_secs(300))
            .set("Content-Type", "application/json")
            .send_string(&body.to_string())
            .expect("chat request")
            .into_string()
            .map(|t| serde_json::from_str(&t).expect("chat JSON"))
            .expect("read the answer");
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Ends the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        self.kill();
    }
}
