//! A tiny HTTP server on 127.0.0.1 that answers the requests a hub client makes (resolve with
//! commit/etag headers, relative and absolute redirects, byte ranges, 401/403/404), for tests.
#![allow(dead_code)]

use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
pub const TOKEN: &str = "hf_good_token";

/// Each request's path and Range header, in order.
pub type RequestLog = Arc<Mutex<Vec<(String, Option<String>)>>>;

pub struct HubServer {
    pub endpoint: String,
    /// Whether files the server does not know are served as a never-ending trickle.
    pub trickle: bool,
    pub content: Arc<Vec<u8>>,
    /// Every request line and its Range header, in order.
    pub log: RequestLog,
}

pub fn content() -> Vec<u8> {
    (0..300_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The size the trickle claims: far more than it ever sends in a test.
pub const TRICKLE_SIZE: u64 = 400_000_000;

impl HubServer {
    pub fn start() -> Self {
        Self::start_with(false)
    }

    /// A server that answers every other `resolve` URL (a catalogue model, say) with a file
    /// of [`TRICKLE_SIZE`] bytes sent slowly, so a download stays in progress until it is
    /// cancelled or its client goes away.
    pub fn start_trickle() -> Self {
        Self::start_with(true)
    }

    fn start_with(trickle: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let content = Arc::new(content());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (c, l, e) = (content.clone(), log.clone(), endpoint.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (c, l, e) = (c.clone(), l.clone(), e.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &c, &l, &e, trickle);
                });
            }
        });
        Self {
            endpoint,
            trickle,
            content,
            log,
        }
    }

    pub fn ranges(&self) -> Vec<Option<String>> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(_, r)| r.clone())
            .collect()
    }
}

fn serve(
    stream: TcpStream,
    content: &[u8],
    log: &RequestLog,
    endpoint: &str,
    trickle: bool,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let (mut range, mut auth) = (None, None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        let (name, value) = h.split_once(':').unwrap_or((&h, ""));
        match name.trim().to_ascii_lowercase().as_str() {
            "range" => range = Some(value.trim().to_string()),
            "authorization" => auth = Some(value.trim().to_string()),
            _ => {}
        }
    }
    log.lock().unwrap().push((path.clone(), range.clone()));
    let etag = sha256_hex(content);
    let mut out = stream;
    let hub_headers = format!("x-repo-commit: {COMMIT}\r\netag: \"{etag}\"\r\n");
    match path.as_str() {
        "/org/tiny/resolve/main/model.gguf" => send_range(&mut out, content, range.as_deref(), &hub_headers),
        "/org/renamed/resolve/main/model.gguf" => head(&mut out, "307 Temporary Redirect", "location: /org/tiny/resolve/main/model.gguf\r\n"),
        "/org/cdn/resolve/main/model.gguf" => head(
            &mut out,
            "302 Found",
            &format!("location: {endpoint}/cdn-blob\r\nx-repo-commit: {COMMIT}\r\nx-linked-etag: \"{etag}\"\r\nx-linked-size: {}\r\n", content.len()),
        ),
        "/cdn-blob" => send_range(&mut out, content, range.as_deref(), ""),
        "/org/gated/resolve/main/model.gguf" => match auth.as_deref() {
            Some(a) if a == format!("Bearer {TOKEN}") => send_range(&mut out, content, range.as_deref(), &hub_headers),
            Some(_) => head(&mut out, "403 Forbidden", ""),
            None => head(&mut out, "401 Unauthorized", ""),
        },
        p if trickle && p.contains("/resolve/") => send_trickle(&mut out, range.as_deref()),
        _ => head(&mut out, "404 Not Found", ""),
    }
}

/// A range of the trickle file: zeros, 16 KiB every 200 ms, until the client hangs up.
fn send_trickle(out: &mut TcpStream, range: Option<&str>) -> std::io::Result<()> {
    let start: u64 = range
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split('-').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    // The metadata request asks for one byte; the transfer for the rest.
    let end = match range {
        Some("bytes=0-0") => 1,
        _ => TRICKLE_SIZE,
    };
    write!(
        out,
        "HTTP/1.1 206 Partial Content\r\nx-repo-commit: {COMMIT}\r\netag: \"trickle\"\r\n\
         content-range: bytes {start}-{}/{TRICKLE_SIZE}\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        end - 1,
        end - start
    )?;
    let mut left = end - start;
    let chunk = [0u8; 16 * 1024];
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        out.write_all(&chunk[..n])?;
        left -= n as u64;
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    out.flush()
}

fn head(out: &mut TcpStream, status: &str, headers: &str) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\n{headers}content-length: 0\r\nconnection: close\r\n\r\n"
    )
}

fn send_range(
    out: &mut TcpStream,
    content: &[u8],
    range: Option<&str>,
    headers: &str,
) -> std::io::Result<()> {
    let total = content.len();
    let (start, end) = match range.and_then(|r| r.strip_prefix("bytes=")) {
        Some(spec) => {
            let (a, b) = spec.split_once('-').unwrap_or((spec, ""));
            let a: usize = a.parse().unwrap_or(0);
            let b: usize = b.parse().map(|b: usize| b + 1).unwrap_or(total);
            (a.min(total), b.min(total))
        }
        None => (0, total),
    };
    let status = if range.is_some() {
        "206 Partial Content"
    } else {
        "200 OK"
    };
    write!(
        out,
        "HTTP/1.1 {status}\r\n{headers}content-range: bytes {start}-{}/{total}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        end.saturating_sub(1),
        end - start
    )?;
    // Small writes so a client can cancel half-way.
    for chunk in content[start..end].chunks(16 * 1024) {
        out.write_all(chunk)?;
    }
    out.flush()
}
