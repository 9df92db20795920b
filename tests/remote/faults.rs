//! `taper ask` against the loopback fault server: every failure a remote can have is one
//! clear sentence, the partial answer stays on stdout, and the key never shows.

use crate::remote_server::{content, finish, models, now, FaultServer, Reply};
use serde_json::json;
use std::process::{Command, Output};
use std::time::Duration;

const KEY: &str = "sk-test-very-secret-key";

/// `taper ask -m t/m PROMPT` with a config naming the server as remote `t`.
fn ask_with(url: &str, remote_extra: &str, args: &[&str], key: Option<&str>) -> Output {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[[remotes]]\nname = \"t\"\nurl = \"{url}\"\napi_key_env = \"TAPER_TEST_KEY\"\n{remote_extra}\n"),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_taper"));
    cmd.env("TAPER_HOME", home.path())
        .env_remove("TAPER_TEST_KEY")
        .args(["--config", config.to_str().unwrap(), "ask", "-m", "t/m"])
        .args(args)
        .arg("hello");
    if let Some(key) = key {
        cmd.env("TAPER_TEST_KEY", key);
    }
    cmd.output().expect("run taper")
}

fn ask(url: &str, remote_extra: &str) -> Output {
    ask_with(url, remote_extra, &[], Some(KEY))
}

fn text(o: &Output) -> (String, String) {
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(
        !out.contains(KEY) && !err.contains(KEY),
        "the key leaked: {out} {err}"
    );
    (out, err)
}

/// A server listing model `m` and answering chats with `chat`.
fn serving(chat: impl Fn() -> Reply + Send + Sync + 'static) -> FaultServer {
    FaultServer::start(move |r| match r.path.as_str() {
        "/v1/models" => models(&["m"]),
        "/v1/chat/completions" => chat(),
        _ => Reply::Json(404, vec![], "{}".into()),
    })
}

fn failed_with(o: &Output, words: &[&str]) -> String {
    let (out, err) = text(o);
    assert!(!o.status.success(), "should fail: {out} {err}");
    for w in words {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    out
}

#[test]
fn connection_refused_and_unresolvable_names_say_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = ask(&format!("http://127.0.0.1:{port}/v1"), "");
    failed_with(&o, &["connection refused", "is the server running"]);
    let o = ask("http://no-such-host.invalid/v1", "");
    failed_with(&o, &["does not resolve"]);
}

#[test]
fn tls_to_a_plain_server_is_a_tls_error() {
    let s = serving(|| now(vec![]));
    let o = ask(&s.url().replace("http://", "https://"), "");
    failed_with(&o, &["TLS error"]);
}

#[test]
fn unauthorized_names_the_variable_to_set() {
    let s = FaultServer::start(|r| match r.header("authorization") {
        Some(a) if a == format!("Bearer {KEY}") => models(&["m"]),
        _ => Reply::Json(
            401,
            vec![],
            json!({"error": {"message": "Invalid API Key"}}).to_string(),
        ),
    });
    let o = ask_with(&s.url(), "", &[], None);
    failed_with(&o, &["401", "Invalid API Key", "export TAPER_TEST_KEY"]);
    let o = ask_with(&s.url(), "", &[], Some("wrong"));
    failed_with(&o, &["401", "check the key in TAPER_TEST_KEY"]);
    let s = FaultServer::start(|_| Reply::Json(403, vec![], "{}".into()));
    failed_with(&ask(&s.url(), ""), &["refused the API key (403)"]);
}

#[test]
fn a_model_the_server_does_not_serve_is_named() {
    let s = FaultServer::start(|r| match r.path.as_str() {
        "/v1/models" => models(&["other-a", "other-b"]),
        _ => Reply::Json(404, vec![], "{}".into()),
    });
    failed_with(
        &ask(&s.url(), ""),
        &["does not serve \"m\"", "other-a, other-b"],
    );
    // Listed, but the chat endpoint says 404 (a model unloaded meanwhile).
    let s = serving(|| Reply::Json(404, vec![], json!({"error": "model not found"}).to_string()));
    failed_with(
        &ask(&s.url(), ""),
        &["does not serve model \"m\" (404)", "model not found"],
    );
}

#[test]
fn busy_and_broken_servers_give_status_and_retry_after() {
    let s = serving(|| Reply::Json(429, vec![("Retry-After", "7".into())], "{}".into()));
    failed_with(
        &ask(&s.url(), ""),
        &["rate-limiting", "429", "retry after 7 s"],
    );
    let s = serving(|| {
        let body = json!({"error": {"message": "overloaded"}}).to_string();
        Reply::Json(503, vec![("Retry-After", "3".into())], body)
    });
    failed_with(
        &ask(&s.url(), ""),
        &["server error (503)", "overloaded", "retry after 3 s"],
    );
}

#[test]
fn a_stall_keeps_the_partial_answer() {
    let s = serving(|| Reply::Sse(vec![(content("Hel"), Duration::from_secs(30))]));
    let o = ask(&s.url(), "stall_timeout_s = 1");
    let out = failed_with(&o, &["sent nothing for 1 s", "stalled"]);
    assert_eq!(out.trim(), "Hel");
}

#[test]
fn a_stream_without_done_and_a_malformed_chunk_are_reported() {
    let s = serving(|| now(vec![content("Hi"), content(" there")]));
    let out = failed_with(&ask(&s.url(), ""), &["ended the answer early", "[DONE]"]);
    assert_eq!(out.trim(), "Hi there");
    let s = serving(|| {
        now(vec![
            content("Hi"),
            b"data: {\"choices\": [{\"delta\n\n".to_vec(),
        ])
    });
    let out = failed_with(&ask(&s.url(), ""), &["not valid JSON"]);
    assert_eq!(out.trim(), "Hi");
    let s = serving(|| {
        now(vec![
            content("Hi"),
            b"data: {\"error\":{\"message\":\"KV cache full\"}}\n\n".to_vec(),
        ])
    });
    failed_with(&ask(&s.url(), ""), &["reported an error: KV cache full"]);
}

#[test]
fn endless_and_oversized_answers_are_cut_off() {
    let s = serving(|| Reply::Endless {
        piece: content("la "),
        every: Duration::from_millis(1),
    });
    let o = ask_with(&s.url(), "", &["-n", "5"], Some(KEY));
    let out = failed_with(&o, &["far past max_tokens"]);
    assert!(out.starts_with("la la la"), "{out}");
    let big = "x".repeat(64 * 1024);
    let s = serving(move || Reply::Endless {
        piece: content(&big),
        every: Duration::ZERO,
    });
    let o = ask_with(&s.url(), "", &["-n", "100000"], Some(KEY));
    failed_with(&o, &["an answer over 8 MiB"]);
}

#[test]
fn a_redirect_is_refused_and_the_key_goes_nowhere_else() {
    let other = FaultServer::start(|_| models(&["m"]));
    let to = format!("{}/v1/models", other.root);
    let s =
        FaultServer::start(move |_| Reply::Json(302, vec![("Location", to.clone())], "".into()));
    failed_with(
        &ask(&s.url(), ""),
        &["redirected to", "does not follow redirects"],
    );
    assert!(other.requests().is_empty(), "the other host was contacted");
    // The key went to the remote's own host, as a bearer token.
    let first = &s.requests()[0];
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn a_byte_at_a_time_stream_gives_the_whole_answer() {
    let s = serving(|| {
        let mut all = content("Hé");
        all.extend(b": keep-alive\n\n");
        all.extend(content("llo\nworld"));
        all.extend(finish(
            json!({"usage": {"prompt_tokens": 3, "completion_tokens": 2}}),
        ));
        Reply::Sse(all.into_iter().map(|b| (vec![b], Duration::ZERO)).collect())
    });
    let o = ask_with(&s.url(), "", &["--stats"], Some(KEY));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(out, "Héllo\nworld\n");
    assert!(
        err.contains("prompt 3 tok") && err.contains("generated 2 tok"),
        "{err}"
    );
}
