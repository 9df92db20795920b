//! `taper serve` with several models (`-m` given twice): `/v1/models` lists each, a request's
//! `model` picks the one that answers (the first when it names none), and each answers as it
//! does served alone; an unknown name is a 404 naming the ones there are. Two files that would
//! share a name, one `--tokenizer` for two models, or a model the machine's memory would not
//! hold even alone, are refused before anything loads. (Models that fit only one at a time:
//! `on_demand.rs`.)

use crate::common;
use crate::serve_support::{get, post, refused, Server};
use serde_json::{json, Value};

const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1";
const GEMMA3: &str = "gemma-3-270m-q4_k_m";

fn ask(server: &Server, model: Option<&str>) -> (u16, Value) {
    let mut body = json!({
        "messages": [{"role": "user", "content": "Name a colour."}],
        "max_tokens": 12,
        "temperature": 0,
    });
    if let Some(model) = model {
        body["model"] = json!(model);
    }
    post(
        &format!("{}/v1/chat/completions", server.url),
        &body.to_string(),
    )
}

fn text(answer: &Value) -> String {
    answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no answer text: {answer}"))
        .to_string()
}

#[test]
fn each_model_answers_the_requests_that_name_it_as_it_does_alone() {
    let gemma = common::real_model(common::GEMMA3);
    let gemma = gemma.to_str().expect("a UTF-8 path");
    let server = Server::start(&["-m", gemma, "--parallel", "2", "--ctx-size", "1024"]);

    let (status, listed) = get(&format!("{}/v1/models", server.url));
    assert_eq!(status, 200, "{listed}");
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(ids, [SMOLLM2, GEMMA3], "{listed}");
    let (_, health) = get(&format!("{}/health", server.url));
    assert_eq!(health["slots_idle"], 4, "{health}");

    let mut together = Vec::new();
    for model in [SMOLLM2, GEMMA3] {
        let (status, answer) = ask(&server, Some(model));
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["model"], model, "{answer}");
        together.push(text(&answer));
    }
    let (status, unnamed) = ask(&server, None);
    assert_eq!(status, 200, "{unnamed}");
    assert_eq!(
        unnamed["model"], SMOLLM2,
        "the first model answers: {unnamed}"
    );
    assert_eq!(text(&unnamed), together[0]);

    let (status, error) = ask(&server, Some("qwen3-4b"));
    assert_eq!(status, 404, "{error}");
    assert_eq!(error["error"]["param"], "model", "{error}");
    let message = error["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains(SMOLLM2) && message.contains(GEMMA3),
        "{message}"
    );
    drop(server);

    // Alone, Gemma 3 answers the same words: the other model beside it changes nothing.
    let alone = Server::start_with(
        std::ffi::OsStr::new(gemma),
        &["--parallel", "2", "--ctx-size", "1024"],
    );
    let (status, answer) = ask(&alone, Some("any-name"));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["model"], GEMMA3,
        "one model answers whatever the name"
    );
    assert_eq!(text(&answer), together[1]);
}

#[test]
fn models_that_cannot_be_told_apart_are_refused_before_loading() {
    let smollm2 = common::real_model(common::SMOLLM2);
    let gemma = common::real_model(common::GEMMA3);
    let dir = tempfile::tempdir().unwrap();
    let twin = dir.path().join(format!("{SMOLLM2}.gguf"));
    std::fs::copy(&smollm2, &twin).expect("copy the model");
    for (flags, said) in [
        (
            vec![&smollm2, &twin],
            "would both be served as \"SmolLM2-135M-Instruct.Q4_1\"",
        ),
        (vec![&smollm2, &gemma], "--tokenizer names one model's"),
    ] {
        let os = std::ffi::OsStr::new;
        let mut args = Vec::new();
        for model in flags {
            args.extend([os("-m"), model.as_os_str()]);
        }
        if said.starts_with("--tokenizer") {
            args.extend([os("--tokenizer"), os("tokenizer.json")]);
        }
        let stderr = refused(args);
        assert!(stderr.contains(said), "{stderr}");
    }
}

#[test]
fn a_model_the_machine_could_not_hold_even_alone_is_refused_before_any_loads() {
    // Full f32 caches of 64 slots: about 77 GB for Gemma 3 (its 32,768 tokens), more than any
    // test machine has, though a cache only takes memory as it fills, so only the check before
    // loading can refuse it. No unloading could make its room.
    let (gemma, smollm2) = (
        common::real_model(common::GEMMA3),
        common::real_model(common::SMOLLM2),
    );
    let stderr = refused([
        "-m",
        gemma.to_str().expect("a UTF-8 path"),
        "-m",
        smollm2.to_str().expect("a UTF-8 path"),
        "--parallel",
        "64",
        "--ctx-size",
        "32768",
        "--cache-type",
        "f32",
    ]);
    assert!(
        stderr.contains(&format!(
            "{GEMMA3} needs about 77.6 GB (its weights and 64 slots' full KV cache)"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("(the memory available, less 536.9 MB kept free)")
            && stderr.contains("lower --parallel or --ctx-size"),
        "{stderr}"
    );
}
