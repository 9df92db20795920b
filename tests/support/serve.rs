//! Helpers of the `taper serve` tests: a server process on 127.0.0.1 (a free port, killed
//! when dropped) and small HTTP clients, all with bounded waits.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Server {
    child: Child,
    pub url: String,
}

impl Server {
    /// `taper serve` on the SmolLM2 test model with `extra` flags; waits (bounded) for its URL.
    pub fn start(extra: &[&str]) -> Server {
        let model = super::common::real_model(super::common::SMOLLM2);
        Self::start_with(model.as_os_str(), extra)
    }

    /// `model`: what `-m` gets (a path, or a name from a `--config` in `extra`). Its request
    /// log is off, unless `extra` asks for one (then it goes to `stderr`).
    pub fn start_with(model: &std::ffi::OsStr, extra: &[&str]) -> Server {
        Self::start_logged(model, extra, Stdio::inherit())
    }

    pub fn start_logged(model: &std::ffi::OsStr, extra: &[&str], stderr: Stdio) -> Server {
        let quiet: &[&str] = if extra.contains(&"--log-format") {
            &[]
        } else {
            &["--quiet"]
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_taper"))
            .arg("serve")
            .arg("-m")
            .arg(model)
            .args(["--port", "0", "--threads", "2"])
            .args(quiet)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start taper serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("taper serve printed no URL within a minute");
        let start = line.find("http://").expect("a URL in the first line");
        let url = line[start..]
            .split_whitespace()
            .next()
            .expect("URL")
            .trim_end_matches("/v1")
            .to_string();
        Server { child, url }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// host:port
    pub fn address(&self) -> String {
        self.url.trim_start_matches("http://").to_string()
    }

    /// Resident memory of the server process, in kB.
    pub fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS")
    }

    /// Waits (bounded) until /health says no slot is busy.
    pub fn wait_idle(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, health) = get(&format!("{}/health", self.url));
            if health["slots_processing"] == 0 && health["requests_queued"] == 0 {
                return;
            }
            assert!(Instant::now() < deadline, "slots still busy: {health}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(120))
        .build()
}

fn read_json(response: ureq::Response) -> (u16, Value) {
    let status = response.status();
    let body = response.into_string().expect("body");
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// `taper serve ARGS`, which must refuse to start (exit status 1) before it listens: its
/// stderr.
pub fn refused<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_taper"))
        .args(["serve", "--port", "0", "--quiet"])
        .args(args)
        .output()
        .expect("run taper serve");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty(), "it never listened");
    stderr
}

pub fn get(url: &str) -> (u16, Value) {
    match agent().get(url).call() {
        Ok(r) => read_json(r),
        Err(ureq::Error::Status(_, r)) => read_json(r),
        Err(e) => panic!("GET {url}: {e}"),
    }
}

/// POSTs `body` as is; the status and the JSON answer.
pub fn post(url: &str, body: &str) -> (u16, Value) {
    match agent()
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(r) => read_json(r),
        Err(ureq::Error::Status(_, r)) => read_json(r),
        Err(e) => panic!("POST {url}: {e}"),
    }
}

/// A streamed answer: the text of its deltas (content, or `text` for completions), its
/// finish reason and the usage chunk (Null when none came). Panics unless it ends with
/// `[DONE]`.
pub struct Streamed {
    pub status: u16,
    pub text: String,
    pub finish: Value,
    pub usage: Value,
}

pub fn stream(url: &str, body: &str) -> Streamed {
    let response = match agent()
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(r) => r,
        Err(ureq::Error::Status(code, r)) => {
            return Streamed {
                status: code,
                text: r.into_string().unwrap_or_default(),
                finish: Value::Null,
                usage: Value::Null,
            }
        }
        Err(e) => panic!("POST {url}: {e}"),
    };
    let status = response.status();
    let mut out = Streamed {
        status,
        text: String::new(),
        finish: Value::Null,
        usage: Value::Null,
    };
    let mut done = false;
    for line in BufReader::new(response.into_reader()).lines() {
        let line = line.expect("stream line");
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(data).expect("chunk JSON");
        assert!(chunk.get("error").is_none(), "error in stream: {chunk}");
        if let Some(choice) = chunk["choices"].get(0) {
            let piece = choice["delta"]["content"]
                .as_str()
                .or_else(|| choice["text"].as_str())
                .unwrap_or("");
            out.text.push_str(piece);
            if !choice["finish_reason"].is_null() {
                out.finish = choice["finish_reason"].clone();
            }
        }
        if !chunk["usage"].is_null() {
            out.usage = chunk["usage"].clone();
        }
    }
    assert!(done, "the stream ended without [DONE]");
    out
}

/// Reads whatever a raw connection sends until it closes or `limit` passes.
pub fn read_until_closed(stream: &mut std::net::TcpStream, limit: Duration) -> (String, bool) {
    stream.set_read_timeout(Some(limit)).expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            // A reset is a close too.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (String::from_utf8_lossy(&got).into_owned(), true)
            }
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
        }
        if Instant::now() > deadline {
            return (String::from_utf8_lossy(&got).into_owned(), false);
        }
    }
}
