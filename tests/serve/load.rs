//! `taper serve` under load on loopback: 16 clients × 4 requests each, streamed and not, on
//! 4 slots decoded together. Every request is answered (or cleanly refused), each answer with
//! a fixed seed equals the one the same request gets alone (batched decoding changes no
//! token), and memory stays flat from round to round. A full queue answers 503 with
//! Retry-After.

use crate::serve_support::{post, stream, Server};
use serde_json::json;
use std::collections::HashMap;

const PROMPTS: [&str; 4] = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Name three colours.",
    "Why is the sky blue? Explain in detail, step by step, for a child of seven.",
];
const CLIENTS: usize = 16;
const ROUNDS: usize = 4;

/// The request client `c` sends in round `r`: (prompt, seed).
fn key(c: usize, r: usize) -> (usize, u64) {
    ((c + r) % PROMPTS.len(), (c % 3) as u64)
}

fn body((prompt, seed): (usize, u64), streamed: bool) -> String {
    json!({ "messages": [{ "role": "user", "content": PROMPTS[prompt] }],
        "max_tokens": 20, "temperature": 0.9, "seed": seed, "stream": streamed })
    .to_string()
}

/// The answer's text, or None when the server refused it with a 503.
fn ask(url: &str, key: (usize, u64), streamed: bool) -> Option<String> {
    if streamed {
        let s = stream(url, &body(key, true));
        match s.status {
            200 => Some(s.text),
            503 => None,
            other => panic!("status {other}: {}", s.text),
        }
    } else {
        let (status, answer) = post(url, &body(key, false));
        match status {
            200 => Some(
                answer["choices"][0]["message"]["content"]
                    .as_str()?
                    .to_string(),
            ),
            503 => None,
            other => panic!("status {other}: {answer}"),
        }
    }
}

#[test]
fn sixteen_clients_get_the_answers_each_gets_alone() {
    let server = Server::start(&["--parallel", "4", "--ctx-size", "1024"]);
    let url = format!("{}/v1/chat/completions", server.url);
    let mut alone = HashMap::new();
    for c in 0..CLIENTS {
        for r in 0..ROUNDS {
            let k = key(c, r);
            alone
                .entry(k)
                .or_insert_with(|| ask(&url, k, false).expect("a lone request is answered"));
        }
    }
    let mut rss = Vec::new();
    let mut refused = 0;
    for round in 0..ROUNDS {
        let answers: Vec<(usize, Option<String>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    let url = &url;
                    scope.spawn(move || (c, ask(url, key(c, round), c % 2 == 0)))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (c, answer) in answers {
            match answer {
                Some(text) => assert_eq!(
                    text,
                    alone[&key(c, round)],
                    "client {c} round {round}: the batched answer differs from the lone one"
                ),
                None => refused += 1,
            }
        }
        server.wait_idle();
        rss.push(server.rss_kb());
    }
    // With 4 slots and a queue of 16 every one of the 16 clients fits.
    assert_eq!(refused, 0, "requests refused although the queue had room");
    let (first, last) = (rss[0], rss[ROUNDS - 1]);
    assert!(
        last <= first + 16 * 1024,
        "memory grew from {first} kB to {last} kB: {rss:?}"
    );
}

#[test]
fn a_full_queue_is_refused_with_retry_after() {
    let server = Server::start(&["--parallel", "1", "--queue", "1"]);
    let url = format!("{}/v1/chat/completions", server.url);
    let results: Vec<(u16, Option<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|c| {
                let url = &url;
                scope.spawn(move || {
                    match ureq::post(url).send_string(&body((c % PROMPTS.len(), 1), false)) {
                        Ok(r) => (r.status(), None),
                        Err(ureq::Error::Status(code, r)) => {
                            (code, r.header("Retry-After").map(str::to_string))
                        }
                        Err(e) => panic!("{e}"),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let answered = results.iter().filter(|(s, _)| *s == 200).count();
    let refused: Vec<_> = results.iter().filter(|(s, _)| *s == 503).collect();
    assert_eq!(answered + refused.len(), 8, "{results:?}");
    assert!(answered >= 1 && !refused.is_empty(), "{results:?}");
    assert!(refused
        .iter()
        .all(|(_, retry)| retry.as_deref() == Some("1")));
    server.wait_idle();
}
