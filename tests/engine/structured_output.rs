//! Answers held to a grammar, end to end on both real test models: `taper ask --json-schema`
//! gives JSON valid against the schema whatever the seed, `--json` a JSON object, `--grammar`
//! exactly a sentence of the grammar; a bad schema is refused before any token, and an answer
//! the token limit cuts before its grammar is complete fails, both with exit 1.

use crate::common;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "city": {"type": "string", "maxLength": 40},
    "country": {"type": "string", "maxLength": 40},
    "landmarks": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 3},
    "capital": {"type": "boolean"}
  },
  "required": ["city", "country", "landmarks", "capital"],
  "additionalProperties": false
}"#;

/// `taper ask` on a real model. Unless `flags` limit it, the answer has room for the longest
/// answer SCHEMA allows (five strings of 40 characters, an emoji taking up to four tokens), so
/// whatever a CPU's rounding makes the sampler draw, only the schema ends it.
fn ask(model: &str, flags: &[&str], prompt: &str) -> Output {
    let limit = match flags.contains(&"-n") {
        true => &[][..],
        false => &["-n", "1024"][..],
    };
    Command::new(env!("CARGO_BIN_EXE_taper"))
        .arg("ask")
        .arg("-m")
        .arg(common::real_model(model))
        .args(limit)
        .args(flags)
        .arg(prompt)
        .output()
        .expect("run taper")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a test file");
    path.display().to_string()
}

/// The answer against SCHEMA, checked field by field (the schema is small enough to check by
/// hand, so the test needs no validator of its own).
fn check_against_schema(answer: &Value) {
    let object = answer.as_object().expect("an object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["capital", "city", "country", "landmarks"],
        "{answer}"
    );
    for field in ["city", "country"] {
        let text = object[field].as_str().expect("a string");
        assert!(text.chars().count() <= 40, "{answer}");
    }
    let landmarks = object["landmarks"].as_array().expect("an array");
    assert!(landmarks.len() <= 3, "{answer}");
    assert!(landmarks.iter().all(Value::is_string), "{answer}");
    assert!(object["capital"].is_boolean(), "{answer}");
}

#[test]
fn every_seed_answers_json_valid_against_the_schema_on_both_models() {
    let dir = tempfile::tempdir().unwrap();
    let schema = write(dir.path(), "city.json", SCHEMA);
    for model in [common::SMOLLM2, common::GEMMA3] {
        for seed in 1..=4 {
            let seed = seed.to_string();
            let flags = [
                "--json-schema",
                &schema,
                "--temperature",
                "0.9",
                "--seed",
                &seed,
            ];
            let out = ask(model, &flags, "Describe Paris in JSON.");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let answer: Value = serde_json::from_str(stdout.trim())
                .unwrap_or_else(|e| panic!("{model} seed {seed}: not JSON ({e}): {stdout}"));
            check_against_schema(&answer);
        }
    }
}

/// Stdout and stderr, for an assertion's message.
fn both(out: &Output) -> String {
    format!(
        "stdout: {:?}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn json_gives_an_object_and_a_grammar_gives_one_of_its_sentences() {
    // Greedy: sampled at the default temperature SmolLM2 sometimes fills a string with emoji
    // past any limit, which is the next test's case, not this one's.
    let out = ask(
        common::SMOLLM2,
        &["--json", "--temperature", "0"],
        "Give me a fruit and its colour.",
    );
    assert!(out.status.success(), "{}", both(&out));
    let answer: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", both(&out)));
    assert!(answer.is_object(), "{answer}");

    let dir = tempfile::tempdir().unwrap();
    let lark = write(dir.path(), "yes-no.lark", "start: \"yes\" | \"no\"\n");
    let out = ask(common::GEMMA3, &["--grammar", &lark], "Is the sky blue?");
    assert!(out.status.success());
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(["yes", "no"].contains(&answer.trim()), "{answer:?}");
}

#[test]
fn a_structured_answer_cut_by_the_token_limit_fails_and_keeps_what_it_had() {
    let dir = tempfile::tempdir().unwrap();
    let schema = write(dir.path(), "city.json", SCHEMA);
    // Four tokens cannot hold the schema's four required fields.
    let out = ask(
        common::SMOLLM2,
        &["--json-schema", &schema, "-n", "4"],
        "Describe Paris in JSON.",
    );
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not complete the JSON schema; -n raises the limit"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with('{'), "{stdout:?}");
    assert!(
        serde_json::from_str::<Value>(stdout.trim()).is_err(),
        "{stdout:?}"
    );
}

#[test]
fn a_bad_schema_or_grammar_is_refused_before_any_token() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, name, text, said) in [
        (
            "--json-schema",
            "bad.json",
            r#"{"type": 5}"#,
            "the JSON schema cannot be used",
        ),
        ("--json-schema", "broken.json", "{\"type\":", "is not JSON"),
        (
            "--grammar",
            "bad.lark",
            "start: (",
            "the grammar cannot be used",
        ),
    ] {
        let path = write(dir.path(), name, text);
        let out = ask(common::SMOLLM2, &[flag, &path], "Hi");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(said), "{stderr}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let out = ask(
        common::SMOLLM2,
        &["--json-schema", "/no/such/file.json"],
        "Hi",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the JSON schema"));
}
