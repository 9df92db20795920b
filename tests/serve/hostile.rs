//! `taper serve` under hostile input: malformed JSON, wrong types, a 100 MB body, 10,000
//! messages, a conversation the chat template rejects, a client vanishing mid-stream and one
//! that never finishes its headers. Each gets the right status (or a closed connection), and
//! the server keeps serving.

use crate::common;

use crate::serve_support::{get, post, read_until_closed, Server};
use serde_json::json;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// A template that, like many models' own, refuses a system message.
const STRICT_TEMPLATE: &str = "{% for m in messages %}{% if m.role == 'system' %}\
{{ raise_exception('System role not supported') }}{% endif %}<|im_start|>{{ m.role }}\n\
{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n";

fn strict_server() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let model = common::real_model(common::SMOLLM2);
    let config = dir.path().join("config.toml");
    let entry = toml_entry(&model.display().to_string());
    std::fs::write(&config, entry).unwrap();
    let config = config.display().to_string();
    let server = Server::start_with(
        "strict".as_ref(),
        &[
            "--config",
            &config,
            "--parallel",
            "2",
            "--header-timeout",
            "2",
        ],
    );
    (server, dir)
}

fn toml_entry(path: &str) -> String {
    format!(
        "[[models]]\nname = \"strict\"\npath = {}\nchat_template = {}\n",
        toml_string(path),
        toml_string(STRICT_TEMPLATE)
    )
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap() // A JSON string is a valid TOML basic string here.
}

fn works(server: &Server) {
    let body = json!({ "messages": [{ "role": "user", "content": "Hi" }], "max_tokens": 4 });
    let (status, answer) = post(
        &format!("{}/v1/chat/completions", server.url),
        &body.to_string(),
    );
    assert_eq!(status, 200, "the server stopped serving: {answer}");
}

/// Sends raw bytes, then reads the response (bounded).
fn raw(server: &Server, request: &[u8]) -> String {
    let mut s = TcpStream::connect(server.address()).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(request);
    read_until_closed(&mut s, Duration::from_secs(20)).0
}

/// Polls `/health` until one slot is processing a request (30 s at most).
fn wait_for_a_busy_slot(server: &Server) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, health) = get(&format!("{}/health", server.url));
        if health["slots_processing"] == 1 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the request never started: {health}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hostile_requests_get_clear_refusals_and_the_server_keeps_serving() {
    let (server, _dir) = strict_server();
    let chat = format!("{}/v1/chat/completions", server.url);
    let (status, err) = post(&chat, "{\"messages\": [");
    assert_eq!(status, 400);
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    let (status, err) = post(
        &chat,
        r#"{"messages":[{"role":"user","content":"x"}],"seed":"x"}"#,
    );
    assert_eq!(
        (status, err["error"]["param"].as_str()),
        (400, Some("seed"))
    );

    let many: Vec<_> = (0..10_000)
        .map(|_| json!({"role": "user", "content": "x"}))
        .collect();
    let (status, err) = post(&chat, &json!({ "messages": many }).to_string());
    assert_eq!(status, 400, "{err}");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most"));

    let system = json!({ "messages": [{ "role": "system", "content": "x" },
        { "role": "user", "content": "y" }] });
    let (status, err) = post(&chat, &system.to_string());
    assert_eq!(status, 400, "{err}");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("System role not supported"), "{message}");
    works(&server);

    // 100 MB declared: refused from the headers alone.
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{{\"messages\":\"",
        100 << 20
    );
    let reply = raw(&server, head.as_bytes());
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    // 100 MB sent in chunks without a length: refused once past the limit.
    let mut s = TcpStream::connect(server.address()).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    let _ = s.write_all(head.as_bytes());
    let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, "a".repeat(1 << 20));
    for _ in 0..100 {
        if s.write_all(chunk.as_bytes()).is_err() {
            break; // The server has answered and closed.
        }
    }
    let (reply, _) = read_until_closed(&mut s, Duration::from_secs(20));
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply:.200}");
    works(&server);

    // A client vanishing mid-stream frees its slot: counting on greedily would take far
    // longer than wait_idle waits (3000 tokens).
    let body = json!({ "prompt": "1, 2, 3, 4, 5,", "max_tokens": 3000, "stream": true,
        "temperature": 0, "repeat_penalty": 1.0 })
    .to_string();
    let mut s = TcpStream::connect(server.address()).unwrap();
    let request = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut first = [0u8; 512];
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let n = std::io::Read::read(&mut s, &mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));
    // The headers go out as soon as the request is accepted, which can be a moment before a
    // slot takes it from the queue: wait for the slot rather than race it.
    wait_for_a_busy_slot(&server);
    drop(s);
    server.wait_idle();
    works(&server);
    // The same without streaming: the client gives up while its answer is computed.
    let whole = body.replace("\"stream\":true", "\"stream\":false");
    assert_ne!(whole, body);
    let mut s = TcpStream::connect(server.address()).unwrap();
    let request = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{whole}",
        whole.len()
    );
    s.write_all(request.as_bytes()).unwrap();
    wait_for_a_busy_slot(&server);
    drop(s);
    server.wait_idle();
    works(&server);

    // Headers that never end: the connection is closed after the header timeout (2 s), and
    // other clients are served meanwhile.
    let mut slow = TcpStream::connect(server.address()).unwrap();
    slow.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    works(&server);
    let (_, closed) = read_until_closed(&mut slow, Duration::from_secs(15));
    assert!(closed, "a connection with unfinished headers stayed open");
    works(&server);
    let (status, _) = get(&format!("{}/health", server.url));
    assert_eq!(status, 200);
}
