//! `taper bench` end to end: the binary measuring a real model and a shape-only file with
//! tiny sizes. Timings are never asserted, only that figures exist and are plausible.

use crate::common;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use taper::engine::gguf::GgufHeader;

/// Runs `taper bench ARGS` with an isolated TAPER_HOME (no config, no models).
fn bench(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_taper"))
        .arg("bench")
        .args(args)
        .env("TAPER_HOME", home)
        .output()
        .expect("taper runs")
}

fn json_records(out: &Output) -> Vec<Value> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "taper bench failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    v.as_array().expect("a JSON array").clone()
}

fn positive(record: &Value, key: &str) -> f64 {
    let x = record[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing: {record}"));
    assert!(x > 0.0 && x.is_finite(), "{key} = {x}");
    x
}

/// Every figure the issue names is there and sane (> 0); the medians lie within the runs.
fn check_record(r: &Value, threads: u64, prompt_tokens: &[u64], runs: usize) {
    assert_eq!(r["threads"], threads);
    let kernels = r["kernels"].as_str().unwrap_or_default();
    assert!(
        ["avx512-vnni", "avx-vnni", "avx2", "scalar"].contains(&kernels),
        "kernels = {kernels:?}"
    );
    positive(r, "file_size_bytes");
    positive(r, "load_s");
    positive(r, "ttft_ms");
    positive(r, "decode_tok_s");
    positive(r, "decode_tok_s_first_quarter");
    positive(r, "decode_tok_s_last_quarter");
    let peak = positive(r, "peak_rss_bytes");
    assert!(peak > 10e6, "a loaded model takes more than 10 MB: {peak}");
    assert!(r["ttft_prompt_tokens"].as_u64().unwrap() > 5);
    let prefill = r["prefill"].as_array().unwrap();
    assert_eq!(prefill.len(), prompt_tokens.len());
    for (p, &n) in prefill.iter().zip(prompt_tokens) {
        assert_eq!(p["prompt_tokens"], n);
        positive(p, "tok_s");
    }
    let all_runs = r["runs"].as_array().unwrap();
    assert_eq!(all_runs.len(), runs);
    for run in all_runs {
        positive(run, "load_s");
        positive(run, "decode_tok_s");
    }
    let [lo, hi] = [
        &r["min_max"]["decode_tok_s"][0],
        &r["min_max"]["decode_tok_s"][1],
    ]
    .map(|v| v.as_f64().unwrap());
    let median = r["decode_tok_s"].as_f64().unwrap();
    assert!(lo <= median && median <= hi);
}

#[test]
fn a_real_model_is_measured_end_to_end() {
    let model = common::real_model(common::SMOLLM2);
    let home = tempfile::tempdir().unwrap();
    let out = bench(
        &[
            "-m",
            model.to_str().unwrap(),
            "--runs",
            "1",
            "--prompt-tokens",
            "16",
            "--gen-tokens",
            "8",
            "--threads",
            "1",
            "--json",
        ],
        home.path(),
    );
    let records = json_records(&out);
    assert_eq!(records.len(), 1);
    let r = &records[0];
    check_record(r, 1, &[16], 1);
    assert_eq!(r["warmup_runs"], 1);
    assert_eq!(r["model"], "SmolLM2-135M-Instruct.Q4_1");
    assert_eq!(r["shape_only"], false);
    assert_eq!(r["architecture"], "llama");
    assert_eq!(
        r["file_size_bytes"],
        std::fs::metadata(&model).unwrap().len()
    );
    assert_eq!(r["runs"][0]["generated_tokens"], 8);
}

/// `--speculative ngram`: every workload decoded both ways, with plausible acceptance, and
/// the verify passes timed.
#[test]
fn speculative_figures_cover_every_workload_and_the_verify_passes() {
    let model = common::real_model(common::SMOLLM2);
    let home = tempfile::tempdir().unwrap();
    let out = bench(
        &[
            "-m",
            model.to_str().unwrap(),
            "--runs",
            "1",
            "--no-warmup",
            "--prompt-tokens",
            "16",
            "--gen-tokens",
            "16",
            "--speculative",
            "ngram",
            "--json",
        ],
        home.path(),
    );
    let records = json_records(&out);
    let figures = &records[0]["runs"][0]["speculation"];
    for workload in ["chat", "rewrite", "quote"] {
        let w = &figures[workload];
        positive(w, "plain_tok_s");
        positive(w, "speculative_tok_s");
        assert!(
            w["generated_tokens"].as_u64().unwrap_or(0) > 0,
            "{workload}: {w}"
        );
        let acceptance = w["acceptance"].as_f64().unwrap_or(-1.0);
        assert!((0.0..=1.0).contains(&acceptance), "{workload}: {w}");
    }
    // Both repetitive workloads repeat their prompt: drafts are made and most are kept.
    for workload in ["rewrite", "quote"] {
        let w = &figures[workload];
        assert!(w["acceptance"].as_f64().unwrap() > 0.5, "{workload}: {w}");
        assert!(
            w["tokens_per_pass"].as_f64().unwrap() > 1.2,
            "{workload}: {w}"
        );
    }
    let costs = figures["verify_cost"].as_array().expect("verify costs");
    let widths: Vec<u64> = costs.iter().filter_map(|c| c["k"].as_u64()).collect();
    assert_eq!(widths, (2..=8).collect::<Vec<u64>>());
    for cost in costs {
        positive(cost, "ratio");
    }
}

#[test]
fn a_catalogue_shape_is_written_measured_and_removed() {
    let home = tempfile::tempdir().unwrap();
    let out = bench(
        &[
            "--shape",
            "smollm2-135m",
            "--runs",
            "1",
            "--prompt-tokens",
            "8",
            "--gen-tokens",
            "4",
            "--no-warmup",
            "--json",
        ],
        home.path(),
    );
    let records = json_records(&out);
    assert_eq!(records.len(), 1);
    let r = &records[0];
    // `--no-warmup`: the one run is the first, and the record says so.
    assert_eq!(r["warmup_runs"], 0);
    let threads = r["threads"].as_u64().unwrap();
    check_record(r, threads, &[8], 1);
    assert_eq!(r["model"], "smollm2-135m (shape-only)");
    assert_eq!(r["shape_only"], true);
    // Within a few MB (the real file's vocabulary) of the real file's size.
    let size = r["file_size_bytes"].as_f64().unwrap();
    let real = taper::catalog::find("smollm2-135m").unwrap().size_bytes as f64;
    assert!(size < real && size > real - 5e6, "{size} vs {real}");
    assert_eq!(r["ttft_prompt_tokens"], 32);
    let path = r["path"].as_str().unwrap();
    assert!(!Path::new(path).exists(), "{path} was not removed");
}

#[test]
fn a_kept_shape_file_and_markdown_at_two_thread_counts() {
    let home = tempfile::tempdir().unwrap();
    let kept = home.path().join("smol-shape.gguf");
    let out = bench(
        &[
            "--shape",
            "smollm2-135m",
            "--runs",
            "1",
            "--prompt-tokens",
            "8",
            "--gen-tokens",
            "4",
            "--threads",
            "1,2",
            "--markdown",
            "--keep-shape-file",
            kept.to_str().unwrap(),
        ],
        home.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let md = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "## Benchmarks",
        "| CPU |",
        "| cores |",
        "| RAM |",
        "| OS |",
        "text quality is not measured",
    ] {
        assert!(md.contains(needle), "{needle}\n{md}");
    }
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| smollm2-135m (shape-only) |"))
        .collect();
    assert_eq!(rows.len(), 2, "{md}");
    assert!(
        rows[0].starts_with("| smollm2-135m (shape-only) | 1 |"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].starts_with("| smollm2-135m (shape-only) | 2 |"),
        "{}",
        rows[1]
    );
    // The kept file is a GGUF without a vocabulary, as other runtimes expect it.
    let h = GgufHeader::read(&kept).unwrap();
    assert_eq!(h.get_str("general.name"), Some("shape-only smollm2-135m"));
    assert_eq!(h.get_str("tokenizer.ggml.model"), Some("no_vocab"));
}

#[test]
fn names_that_are_not_models_say_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let out = bench(&["--shape", "gpt-5"], home.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("qwen3-4b"), "lists the catalogue: {stderr}");

    let out = bench(&["-m", "qwen3-4b"], home.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--shape qwen3-4b"), "{stderr}");
}

#[test]
fn bad_settings_are_refused_before_anything_runs() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["--shape", "smollm2-135m", "--runs", "0"][..],
        &["--shape", "smollm2-135m", "--gen-tokens", "1"][..],
        &["--shape", "smollm2-135m", "--threads", "0"][..],
        &["--shape", "smollm2-135m", "--json", "--markdown"][..],
    ] {
        let out = bench(args, home.path());
        assert!(!out.status.success(), "{args:?}");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("writing"),
            "{args:?}"
        );
    }
}
