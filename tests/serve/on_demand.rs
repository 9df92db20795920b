//! `taper serve` with more models than its budget holds at once: the ones that fit load before
//! it listens, the others when a request names them, the least recently used idle model
//! unloaded to make their room (`--memory-budget`, `--keep-loaded`). Each answers as it does
//! when loaded from the start; `/v1/models` and `/health` say what is loaded; a model still
//! answering is never unloaded under its request: the request that needs its room waits.

use crate::common;
use crate::serve_support::{get, post, refused, stream, Server};
use serde_json::json;
use std::process::Stdio;

const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1";
const GEMMA3: &str = "gemma-3-270m-q4_k_m";

fn ask(server: &Server, model: &str) -> String {
    let body = json!({
        "model": model,
        "messages": [{"role": "user", "content": "Name a colour."}],
        "max_tokens": 12,
        "temperature": 0,
    });
    let (status, answer) = post(
        &format!("{}/v1/chat/completions", server.url),
        &body.to_string(),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["model"], model, "{answer}");
    answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no answer text: {answer}"))
        .to_string()
}

/// Each model's id and whether it is loaded, as `/v1/models` says.
fn loaded(server: &Server) -> Vec<(String, bool)> {
    let (status, listed) = get(&format!("{}/v1/models", server.url));
    assert_eq!(status, 200, "{listed}");
    listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| {
            let id = m["id"].as_str().expect("id").to_string();
            (id, m["meta"]["loaded"].as_bool().expect("meta.loaded"))
        })
        .collect()
}

fn states(smollm2: bool, gemma: bool) -> Vec<(String, bool)> {
    vec![(SMOLLM2.into(), smollm2), (GEMMA3.into(), gemma)]
}

/// Both test models, two slots of 1,024 tokens each (SmolLM2 about 146 MB with its full
/// caches, Gemma 3 about 291 MB), with `extra` limits; the log goes to a file.
fn start(extra: &[&str], log: &std::path::Path) -> Server {
    let gemma = common::real_model(common::GEMMA3);
    let mut flags = vec![
        "-m",
        gemma.to_str().expect("a UTF-8 path"),
        "--parallel",
        "2",
        "--ctx-size",
        "1024",
        "--log-format",
        "text",
    ];
    flags.extend_from_slice(extra);
    let file = std::fs::File::create(log).expect("log file");
    Server::start_logged(
        common::real_model(common::SMOLLM2).as_os_str(),
        &flags,
        Stdio::from(file),
    )
}

#[test]
fn a_model_past_the_budget_loads_when_named_and_the_least_recently_used_one_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    // Room for either model, not both.
    let server = start(&["--memory-budget", "400MB"], &log);
    assert_eq!(
        loaded(&server),
        states(true, false),
        "the first given loads"
    );
    let (_, health) = get(&format!("{}/health", server.url));
    assert_eq!(health["models_loaded"], 1, "{health}");
    assert_eq!(health["slots_idle"], 2, "{health}");

    let smollm2 = ask(&server, SMOLLM2);
    let gemma = ask(&server, GEMMA3);
    assert_eq!(loaded(&server), states(false, true));
    let with_gemma = server.rss_kb();
    // Back and forth: each answers the same words after being unloaded and read again.
    assert_eq!(ask(&server, SMOLLM2), smollm2);
    assert_eq!(loaded(&server), states(true, false));
    // Gemma 3's memory went with it (its file is 155 MB larger than SmolLM2's; about 310 MB
    // with Gemma 3 loaded, 170 MB with SmolLM2 here).
    let with_smollm2 = server.rss_kb();
    assert!(
        with_smollm2 + 64 * 1024 < with_gemma,
        "{with_smollm2} kB with SmolLM2 loaded, {with_gemma} kB with Gemma 3"
    );
    assert_eq!(ask(&server, GEMMA3), gemma);

    let text = std::fs::read_to_string(&log).expect("log");
    let unloads = format!("model unloaded {SMOLLM2} to make room for {GEMMA3}");
    assert_eq!(text.matches(&unloads).count(), 2, "{text}");
    assert_eq!(
        text.matches(&format!("model loaded {SMOLLM2} in ")).count(),
        1,
        "{text}"
    );
    drop(server);

    // Loaded from the start, with room for both, Gemma 3 answers the same.
    let roomy = start(&[], &dir.path().join("roomy.log"));
    assert_eq!(loaded(&roomy), states(true, true));
    assert_eq!(ask(&roomy, GEMMA3), gemma);
    assert_eq!(ask(&roomy, SMOLLM2), smollm2);
}

#[test]
fn a_request_waits_while_the_model_holding_the_room_answers_and_both_complete() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let server = start(&["--keep-loaded", "1"], &log);
    assert_eq!(loaded(&server), states(true, false));
    let url = format!("{}/v1/chat/completions", server.url);
    let long = json!({
        "model": SMOLLM2,
        "messages": [{"role": "user", "content": "Count from one to fifty in words."}],
        "max_tokens": 96,
        "temperature": 0,
        "stream": true,
    })
    .to_string();
    let first = {
        let url = url.clone();
        std::thread::spawn(move || stream(&url, &long))
    };
    // Gemma 3's request comes while SmolLM2 answers (its slot is busy within a few tokens).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, health) = get(&format!("{}/health", server.url));
        if health["slots_processing"] == 1 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never busy: {health}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let gemma = ask(&server, GEMMA3);
    let streamed = first.join().expect("the streaming client");
    // `stream` fails on an error chunk: an unload under the request would have ended it so.
    assert_eq!(streamed.status, 200);
    assert!(
        streamed.finish == "length" || streamed.finish == "stop",
        "SmolLM2's answer ran to its end: {:?} {}",
        streamed.finish,
        streamed.text
    );
    assert!(!gemma.is_empty());
    assert_eq!(loaded(&server), states(false, true));
    let text = std::fs::read_to_string(&log).expect("log");
    let unloads = format!("model unloaded {SMOLLM2} to make room for {GEMMA3}");
    assert_eq!(text.matches(&unloads).count(), 1, "{text}");
}

#[test]
fn a_budget_too_small_for_a_model_alone_is_refused_with_what_it_needs() {
    let smollm2 = common::real_model(common::SMOLLM2);
    let stderr = refused([
        "-m",
        smollm2.to_str().expect("a UTF-8 path"),
        "--parallel",
        "2",
        "--ctx-size",
        "1024",
        "--memory-budget",
        "100MB",
    ]);
    assert!(
        stderr.contains(&format!(
            "{SMOLLM2} needs about 145.5 MB (its weights and 2 slots' full KV cache), more \
             than the 100.0 MB it may have (--memory-budget)"
        )),
        "{stderr}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_taper"))
        .args(["serve", "--memory-budget", "lots"])
        .output()
        .expect("run taper serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("such as 800MB"), "{stderr}");
}

#[test]
fn a_model_kept_busy_by_a_stream_of_requests_still_makes_room_for_another() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(&["--keep-loaded", "1"], &dir.path().join("serve.log"));
    let url = format!("{}/v1/chat/completions", server.url);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Two clients asking SmolLM2 back to back: without a pause it is never idle.
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (url, stop) = (url.clone(), stop.clone());
            std::thread::spawn(move || {
                let body = json!({
                    "model": SMOLLM2,
                    "messages": [{"role": "user", "content": "Name a colour."}],
                    "max_tokens": 24,
                    "temperature": 0,
                })
                .to_string();
                let mut answered = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let (status, answer) = post(&url, &body);
                    assert_eq!(status, 200, "{answer}");
                    answered += 1;
                }
                answered
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // The HTTP client gives up after two minutes: a starved request fails the test.
    let gemma = ask(&server, GEMMA3);
    assert!(!gemma.is_empty());
    // SmolLM2's clients are answered again once Gemma 3 has answered (it loads back).
    std::thread::sleep(std::time::Duration::from_millis(500));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for client in clients {
        let answered = client.join().expect("a SmolLM2 client");
        assert!(answered >= 2, "{answered} answers");
    }
    assert_eq!(loaded(&server), states(true, false));
}
