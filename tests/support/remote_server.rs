//! A loopback fault server for the remote-model tests: each request goes to a handler that
//! says what to send back (a JSON answer, an event stream piece by piece with pauses, raw
//! bytes, nothing at all), so every failure a real server will not produce on demand can be.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// What to answer.
pub enum Reply {
    /// A status, extra headers, and a JSON (or any) body.
    Json(u16, Vec<(&'static str, String)>, String),
    /// A 200 event stream, written piece by piece (each flushed, then the pause), closed
    /// after the last piece.
    Sse(Vec<(Vec<u8>, Duration)>),
    /// A 200 event stream that never ends: `piece` again and again every `every`.
    Endless { piece: Vec<u8>, every: Duration },
    /// Bytes as they are, then close.
    Raw(Vec<u8>),
    /// Never answer (until the client goes or the test ends).
    Hang,
}

pub type Handler = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

pub struct FaultServer {
    /// `http://127.0.0.1:PORT`.
    pub root: String,
    pub log: Arc<Mutex<Vec<Request>>>,
    /// Streams whose client went away before the server finished writing.
    pub closed_by_client: Arc<AtomicUsize>,
}

impl FaultServer {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let root = format!("http://{}", listener.local_addr().expect("address"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(AtomicUsize::new(0));
        let handler: Handler = Arc::new(handler);
        let (l, c) = (log.clone(), closed.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (h, l, c) = (handler.clone(), l.clone(), c.clone());
                std::thread::spawn(move || serve(stream, &h, &l, &c));
            }
        });
        Self {
            root,
            log,
            closed_by_client: closed,
        }
    }

    /// The OpenAI base URL.
    pub fn url(&self) -> String {
        format!("{}/v1", self.root)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }

    pub fn chat_requests(&self) -> Vec<Request> {
        let all = self.requests();
        all.into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .collect()
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (n, v) = h.split_once(':')?;
        headers.push((n.trim().to_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn serve(stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Request>>, closed: &AtomicUsize) {
    let _ = stream.set_nodelay(true);
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    // One request a connection: every answer closes it.
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    log.lock().unwrap().push(request.clone());
    let sse_head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    let written = match handler(&request) {
        Reply::Json(status, headers, body) => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head.push_str(&format!("{n}: {v}\r\n"));
            }
            head.push_str("\r\n");
            out.write_all(head.as_bytes())
                .and_then(|_| out.write_all(body.as_bytes()))
        }
        Reply::Sse(pieces) => out.write_all(sse_head.as_bytes()).and_then(|_| {
            for (bytes, pause) in pieces {
                out.write_all(&bytes)?;
                out.flush()?;
                std::thread::sleep(pause);
            }
            Ok(())
        }),
        Reply::Endless { piece, every } => out.write_all(sse_head.as_bytes()).and_then(|_| {
            // Bounded: a test that forgot to stop still ends (10 minutes of pieces at most).
            for _ in 0..(600_000 / every.as_millis().max(1)) {
                out.write_all(&piece)?;
                out.flush()?;
                std::thread::sleep(every);
            }
            Ok(())
        }),
        Reply::Raw(bytes) => out.write_all(&bytes),
        Reply::Hang => {
            // Until the client closes (a read returns) or ten minutes pass.
            let _ = reader
                .get_ref()
                .set_read_timeout(Some(Duration::from_secs(600)));
            let _ = reader.read(&mut [0u8; 1]);
            Ok(())
        }
    };
    if written.is_err() {
        closed.fetch_add(1, Ordering::SeqCst);
    }
}

/// `data: {json}\n\n` for one chunk whose delta is `delta`.
pub fn delta(delta: serde_json::Value) -> Vec<u8> {
    let chunk = serde_json::json!({
        "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]
    });
    format!("data: {chunk}\n\n").into_bytes()
}

pub fn content(text: &str) -> Vec<u8> {
    delta(serde_json::json!({ "content": text }))
}

/// The end of a stream: a finish reason, a usage chunk (with `extra` merged in), `[DONE]`.
pub fn finish(usage: serde_json::Value) -> Vec<u8> {
    let stop = serde_json::json!({
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    });
    let mut last = serde_json::json!({ "choices": [] });
    if let (Some(l), Some(u)) = (last.as_object_mut(), usage.as_object()) {
        l.extend(u.clone());
    }
    format!("data: {stop}\n\ndata: {last}\n\ndata: [DONE]\n\n").into_bytes()
}

/// A model list in the OpenAI format.
pub fn models(ids: &[&str]) -> Reply {
    let data: Vec<_> = ids
        .iter()
        .map(|id| serde_json::json!({"id": id, "object": "model", "owned_by": "test"}))
        .collect();
    Reply::Json(
        200,
        vec![],
        serde_json::json!({"object": "list", "data": data}).to_string(),
    )
}

/// Pieces sent at once, one after the other.
pub fn now(pieces: Vec<Vec<u8>>) -> Reply {
    Reply::Sse(pieces.into_iter().map(|p| (p, Duration::ZERO)).collect())
}
