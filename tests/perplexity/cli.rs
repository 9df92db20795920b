//! `taper perplexity` end to end on the two real test models, with the GPL-3 text: finite
//! and thread-independent perplexity, a model against its own base file, every kernel path
//! against the default path's base, and a sentence for each bad input.

use crate::common::{real_model, GEMMA3, SMOLLM2};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use taper::engine::generation::{Generator, Unobserved};
use taper::engine::gguf::GgufHeader;
use taper::engine::model;
use taper::engine::prefix_cache::PrefixCache;

const TEXT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/text/GPL-3");
/// Small windows and few of them: each run takes seconds.
const CTX: &str = "128";
const CHUNKS: &str = "3";

/// Largest mean KLD of a kernel path against the default path's base file, measured on this
/// input (ctx 128, the first window of GPL-3; the runs are deterministic): 0.0136 (Gemma 3,
/// scalar, f16 KV cache), with a margin of 1.5x. Every path quantizes activations to 8 bits
/// like ggml but sums in its own order; a one-ulp difference that flips one rounding of an
/// activation grows, layer after layer, into another sample of the activation-quantization
/// noise, so the paths differ by that noise, not by ulps (README, "Perplexity and KL
/// divergence").
const KERNEL_KLD_LIMIT: f64 = 0.02;
/// Least share of positions where a kernel path picks the default path's top token
/// (measured: 92.1%, SmolLM2 scalar and avx2).
const KERNEL_SAME_TOP_LIMIT: f64 = 0.88;

fn taper(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_taper"));
    cmd.arg("perplexity").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run taper")
}

/// A successful run's JSON record, over the first `CHUNKS` windows.
fn json_run(model: &Path, extra: &[&str], env: &[(&str, &str)]) -> Value {
    json_run_over(model, CHUNKS, extra, env)
}

fn json_run_over(model: &Path, chunks: &str, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let model = model.to_str().expect("utf-8 path");
    let mut args = vec![
        "-m",
        model,
        TEXT,
        "--ctx-size",
        CTX,
        "--chunks",
        chunks,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = taper(&args, env);
    assert!(
        out.status.success(),
        "taper perplexity {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// A failed run's message; it must be one sentence from taper, not a panic.
fn failure(args: &[&str]) -> String {
    let out = taper(args, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("taper: "), "{stderr}");
    stderr
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn write_base(model: &Path, dir: &Path, env: &[(&str, &str)]) -> (PathBuf, Value) {
    let base = dir.join("base.kld");
    let base_arg = base.to_str().expect("utf-8 path");
    let v = json_run(model, &["--kl-divergence-base", base_arg], env);
    assert!(base.is_file());
    (base, v)
}

fn kld_run(model: &Path, base: &Path, env: &[(&str, &str)]) -> Value {
    let base = base.to_str().expect("utf-8 path");
    json_run(
        model,
        &["--kl-divergence-base", base, "--kl-divergence"],
        env,
    )
}

#[test]
fn perplexity_is_finite_and_the_same_on_one_and_two_threads() {
    for file in [SMOLLM2, GEMMA3] {
        let model = real_model(file);
        let one = json_run(&model, &["--threads", "1"], &[]);
        let two = json_run(&model, &["--threads", "2"], &[]);
        let ppl = num(&one, "ppl");
        assert!(ppl.is_finite() && ppl > 1.0, "{file}: {one}");
        assert!(num(&one, "ppl_error") > 0.0, "{file}: {one}");
        assert_eq!(one["positions"], 3 * 63);
        // Batch-invariant kernels, rows scored apart and summed in order: bit for bit.
        assert_eq!(ppl.to_bits(), num(&two, "ppl").to_bits(), "{file}");
        assert_eq!(num(&one, "ppl_error"), num(&two, "ppl_error"), "{file}");
    }
}

#[test]
fn a_model_against_its_own_base_file_has_no_divergence() {
    for file in [SMOLLM2, GEMMA3] {
        let model = real_model(file);
        let dir = tempfile::tempdir().expect("tempdir");
        let (base, written) = write_base(&model, dir.path(), &[]);
        let v = kld_run(&model, &base, &[]);
        let kld = &v["kl_divergence"];
        let mean = kld["kld"]["value"].as_f64().expect("kld");
        // Only the base's 16-bit quantization of log-probabilities is left.
        assert!(mean.abs() < 1e-5, "{file}: {kld}");
        assert_eq!(kld["same_top"]["value"], 1.0, "{file}");
        assert_eq!(kld["positions"], 3 * 63);
        let base_ppl = kld["ppl_base"]["value"].as_f64().expect("base ppl");
        assert!(
            (base_ppl / num(&written, "ppl") - 1.0).abs() < 1e-3,
            "{file}"
        );
        assert_eq!(num(&v, "ppl"), num(&written, "ppl"), "{file}");
    }
}

#[test]
fn every_kernel_path_is_close_to_the_default_path() {
    // One window: the scalar path takes seconds a window on Gemma's 262144-token vocabulary.
    for file in [SMOLLM2, GEMMA3] {
        let model = real_model(file);
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("base.kld");
        let base_arg = base.to_str().expect("utf-8 path");
        json_run_over(&model, "1", &["--kl-divergence-base", base_arg], &[]);
        for kernels in ["scalar", "avx2", "default"] {
            let kld_args = ["--kl-divergence-base", base_arg, "--kl-divergence"];
            let env = [("TAPER_KERNELS", kernels)];
            let v = json_run_over(&model, "1", &kld_args, &env);
            let kld = &v["kl_divergence"];
            let mean = kld["kld"]["value"].as_f64().expect("kld");
            let same = kld["same_top"]["value"].as_f64().expect("same top");
            eprintln!("{file} {kernels}: KLD {mean:.6}, same top {same:.4}");
            assert!(mean.abs() < KERNEL_KLD_LIMIT, "{file} {kernels}: {kld}");
            assert!(same > KERNEL_SAME_TOP_LIMIT, "{file} {kernels}: {kld}");
            if kernels == "default" {
                assert!(mean.abs() < 1e-5 && same == 1.0, "{file}: {kld}");
            }
        }
    }
}

#[test]
fn a_base_file_of_another_model_or_text_is_refused() {
    let (smol, gemma) = (real_model(SMOLLM2), real_model(GEMMA3));
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, _) = write_base(&smol, dir.path(), &[]);
    let base_arg = base.to_str().expect("utf-8 path");
    let gemma_arg = gemma.to_str().expect("utf-8 path");
    let smol_arg = smol.to_str().expect("utf-8 path");
    let kld = ["--kl-divergence-base", base_arg, "--kl-divergence"];
    let err = failure(&[&["-m", gemma_arg, TEXT][..], &kld].concat());
    assert!(err.contains("vocabulary of 49152 tokens"), "{err}");
    // Same model, another text: the tokens differ.
    let other = dir.path().join("other.txt");
    let text = std::fs::read_to_string(TEXT).expect("text");
    std::fs::write(&other, format!("Preface.\n{text}")).expect("write");
    let other_arg = other.to_str().expect("utf-8 path");
    let err = failure(&[&["-m", smol_arg, other_arg][..], &kld].concat());
    assert!(err.contains("other tokens"), "{err}");
    let err = failure(&[&["-m", smol_arg, TEXT, "--ctx-size", "64"][..], &kld].concat());
    assert!(err.contains("computed with --ctx-size 128"), "{err}");
    let bytes = std::fs::read(&base).expect("base");
    std::fs::write(&base, &bytes[..bytes.len() / 2]).expect("cut");
    let err = failure(&[&["-m", smol_arg, TEXT][..], &kld].concat());
    assert!(err.contains("is truncated"), "{err}");
    std::fs::write(&base, b"not a base file at all").expect("write");
    let err = failure(&[&["-m", smol_arg, TEXT][..], &kld].concat());
    assert!(err.contains("not a base-logits file"), "{err}");
}

#[test]
fn bad_texts_are_refused_with_a_sentence() {
    let smol = real_model(SMOLLM2);
    let smol_arg = smol.to_str().expect("utf-8 path");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).expect("write");
        p.to_str().expect("utf-8 path").to_string()
    };
    let empty = path("empty.txt", b"");
    let blank = path("blank.txt", b" \n\n\t ");
    let binary = path(
        "binary.bin",
        &[0x7f, b'E', b'L', b'F', 0, 1, 2, 3, 0xff, 0xfe],
    );
    let latin1 = path("latin1.txt", b"caf\xe9 au lait\n");
    let short = path(
        "short.txt",
        b"A text of a few words is not two windows of tokens.\n",
    );
    for (file, want) in [
        (&empty, "is empty"),
        (&blank, "is empty"),
        (&binary, "binary data"),
        (&latin1, "not UTF-8"),
        (&short, "the text is too short"),
    ] {
        let err = failure(&["-m", smol_arg, file, "--ctx-size", CTX]);
        assert!(err.contains(want), "{file}: {err}");
    }
    let missing = dir.path().join("missing.txt");
    let err = failure(&["-m", smol_arg, missing.to_str().expect("utf-8")]);
    assert!(err.contains("cannot read"), "{err}");
    let err = failure(&["-m", smol_arg, TEXT, "--ctx-size", "1000000"]);
    assert!(err.contains("more than the model's context"), "{err}");
    let err = failure(&["-m", smol_arg, TEXT, "--ctx-size", "2"]);
    assert!(err.contains("at least 4"), "{err}");
}

#[test]
fn window_logits_come_in_passes_equal_to_one_forward_of_every_row() {
    // Gemma's vocabulary makes the passes with logits 64 rows long: 150 rows take three.
    let header = GgufHeader::read(&real_model(GEMMA3)).expect("header");
    let mut m = model::load(&header, 256).expect("model");
    let vocab = m.config().vocab_size;
    let tokens: Vec<u32> = (0..200).map(|i| (i * 7919 % 20000 + 100) as u32).collect();
    let whole = m.forward(&tokens, true).expect("forward");
    let mut cache = PrefixCache::default();
    let mut generator = Generator {
        model: m.as_mut(),
        cache: &mut cache,
        tokenizer: None,
    };
    let (mut rows, mut passes) = (Vec::new(), 0);
    let done = generator
        .prefill_fresh_all_logits(&tokens, 50, &mut Unobserved, &mut |logits| {
            rows.extend_from_slice(logits);
            passes += 1;
            Ok(())
        })
        .expect("window");
    assert!(done);
    assert_eq!(passes, 3);
    assert_eq!(rows.len(), 150 * vocab);
    // Bit for bit: the kernels are batch-invariant.
    assert!(
        rows == whole[50 * vocab..],
        "rows differ from one forward pass"
    );
    assert_eq!(generator.cache.tokens(), &tokens[..]);
}
