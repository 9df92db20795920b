//! `taper perplexity` beside llama.cpp's own `llama-perplexity`, on both real test models and
//! the GPL-3 text: the same perplexity within 0.5%, a small KL divergence from llama.cpp's
//! base file, llama.cpp reading the base file taper writes, and fidelity: against the exact
//! path (every weight dequantized to f32, f32 activations, an f32 KV cache), each of taper's
//! kernel paths diverges about as little as llama.cpp does.
//!
//! llama.cpp is built from the vendored source of llama-cpp-python 0.3.36 by
//! `scripts/llama-cpp` (once per machine, into a cache outside the repository;
//! `TAPER_LLAMA_CPP_BIN` names its folder when the test command has built it already). Its base
//! files are kept beside its binaries and made again when missing; the test says when it
//! builds either.

use crate::common::{real_model, GEMMA3, SMOLLM2};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const TEXT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/text/GPL-3");
const CTX: &str = "128";
/// Ten windows: 630 scored positions, a few seconds a run on each engine.
const CHUNKS: &str = "10";

/// Largest KLD of taper (default kernels, f16 KV cache) against llama.cpp's base file.
/// Measured on these ten windows: SmolLM2 0.0061, Gemma 3 0.0070 (two engines that each
/// requantize activations to 8 bits, in their own summation orders); margin 1.5x.
const KLD_VS_LLAMA_CPP_LIMIT: f64 = 0.011;
/// Least share of positions where taper's top token is llama.cpp's (measured 93.7–95.2%).
const SAME_TOP_VS_LLAMA_CPP_LIMIT: f64 = 0.90;

/// The folder with llama.cpp's binaries: the test command's build, or one made now.
fn llama_cpp_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("TAPER_LLAMA_CPP_BIN") {
        return PathBuf::from(bin);
    }
    eprintln!("building llama.cpp's llama-perplexity with scripts/llama-cpp (once per machine)");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/llama-cpp");
    let out = Command::new(script)
        .arg("llama-perplexity")
        .output()
        .expect("run scripts/llama-cpp");
    assert!(
        out.status.success(),
        "scripts/llama-cpp failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// llama-perplexity's output (stdout and stderr, where it logs) for `args` on `model`.
fn llama_perplexity(bin: &Path, model: &Path, args: &[&str]) -> String {
    let out = Command::new(bin.join("llama-perplexity"))
        .arg("-m")
        .arg(model)
        .args(["-f", TEXT, "-c", CTX, "-t", "2", "--chunks", CHUNKS])
        .args(args)
        .output()
        .expect("run llama-perplexity");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "llama-perplexity {args:?}: {text}");
    text
}

/// The number after `label` in llama-perplexity's output (its log lines carry a time stamp
/// before the label, and its progress line may run into it).
fn reported(output: &str, label: &str) -> f64 {
    output
        .lines()
        .find_map(|l| l.split_once(label).map(|(_, rest)| rest))
        .and_then(|rest| {
            rest.trim_start_matches([' ', ':', '='])
                .split_whitespace()
                .next()
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in llama-perplexity's output:\n{output}"))
}

/// llama.cpp's base file for `model` and the perplexity it reported making it; both kept
/// beside the binaries, made when missing.
fn llama_cpp_base(bin: &Path, model: &Path) -> (PathBuf, f64) {
    let dir = bin.join("../taper-bases");
    std::fs::create_dir_all(&dir).expect("base folder");
    let stem = model.file_stem().and_then(|s| s.to_str()).expect("name");
    let base = dir.join(format!("{stem}-c{CTX}-n{CHUNKS}.kld"));
    let ppl_file = base.with_extension("ppl");
    if !(base.is_file() && ppl_file.is_file()) {
        eprintln!("making llama.cpp's base file {}", base.display());
        let out = llama_perplexity(
            bin,
            model,
            &["--kl-divergence-base", base.to_str().expect("utf-8")],
        );
        let ppl = reported(&out, "Final estimate: PPL");
        std::fs::write(&ppl_file, ppl.to_string()).expect("write ppl");
    }
    let ppl = std::fs::read_to_string(&ppl_file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .expect("a number in the .ppl file");
    (base, ppl)
}

/// `taper perplexity --json` over the same windows, with `extra` and the environment `env`.
fn taper(model: &Path, extra: &[&str], env: &[(&str, &str)]) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_taper"));
    cmd.arg("perplexity").arg("-m").arg(model);
    cmd.args([TEXT, "--ctx-size", CTX, "--chunks", CHUNKS, "--json"]);
    cmd.args(extra).envs(env.iter().copied());
    let out = cmd.output().expect("run taper");
    assert!(
        out.status.success(),
        "taper perplexity {extra:?} {env:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// taper's mean KLD and same-top share against `base`.
fn taper_kld(model: &Path, base: &Path, env: &[(&str, &str)]) -> (f64, f64, Value) {
    let base = base.to_str().expect("utf-8");
    let v = taper(
        model,
        &["--kl-divergence-base", base, "--kl-divergence"],
        env,
    );
    let kld = &v["kl_divergence"];
    let mean = kld["kld"]["value"].as_f64().expect("kld");
    let same = kld["same_top"]["value"].as_f64().expect("same top");
    (mean, same, v)
}

#[test]
fn perplexity_and_logits_agree_with_llama_cpp() {
    let bin = llama_cpp_bin();
    for file in [SMOLLM2, GEMMA3] {
        let model = real_model(file);
        let (base, llama_ppl) = llama_cpp_base(&bin, &model);
        let (kld, same_top, v) = taper_kld(&model, &base, &[]);
        let ppl = v["ppl"].as_f64().expect("ppl");
        eprintln!(
            "{file}: PPL taper {ppl:.4}, llama.cpp {llama_ppl:.4}; KLD {kld:.6}, same top \
             {:.2}%",
            100.0 * same_top
        );
        // The two perplexities differ by the mean over positions of the difference of the two
        // engines' log-likelihoods, whose standard error the report gives (paired, as
        // llama.cpp's `ln(PPL(Q)/PPL(base))`). Rounding noise keeps that mean within a few
        // errors; a systematic fault (a wrong scale, a dropped term) moves every position the
        // same way and leaves it many errors out. A fixed 0.5% held on an Intel Xeon (+0.13%)
        // but not on an AMD Zen 4, where llama.cpp's own kernels put Gemma 3 at 18.07 instead
        // of 18.27, and taper's 18.30 was then a paired difference of 0.0137 ± 0.0051 above it
        // (2.7 errors; SmolLM2 −0.0024 ± 0.0046).
        let ratio = &v["kl_divergence"]["ln_ppl_ratio"];
        let (ln_ratio, error) = (
            ratio["value"].as_f64().expect("ln ppl ratio"),
            ratio["error"].as_f64().expect("its error"),
        );
        assert!(
            ln_ratio.abs() < 4.0 * error,
            "{file}: PPL {ppl} vs {llama_ppl}, ln ratio {ln_ratio} ± {error}"
        );
        assert!(kld < KLD_VS_LLAMA_CPP_LIMIT, "{file}: KLD {kld}");
        assert!(same_top > SAME_TOP_VS_LLAMA_CPP_LIMIT, "{file}: {same_top}");
    }
}

/// The kernel paths this machine runs (`TAPER_KERNELS`); the default is the best one.
fn kernel_paths() -> Vec<&'static str> {
    let mut paths = vec!["scalar"];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        paths.push("avx2");
    }
    paths.push("best");
    paths
}

/// How far each kernel path of taper may diverge from the exact path, as a multiple of how far
/// llama.cpp does, per model.
/// - SmolLM2 (Q4_1 and Q8_0): both engines quantize these formats' activations alike, to
///   8-bit blocks of 32, so the divergences are two samples of the same rounding noise: on
///   these ten windows the paths measured 0.96–1.02x llama.cpp's (on 20 windows 0.97–1.00x;
///   README, "Perplexity and KL divergence").
/// - Gemma 3 (mostly Q4_K/Q6_K where the rounding matters): taper gives the k-quants'
///   activations a step per 32 where llama.cpp has one per 256, and measured 0.44–0.50x here
///   (0.43–0.47x on 20 windows). Back at one step per 256 it would be at about 1.0x.
///
/// A kernel that lost precision (a dropped bit, a coarser scale) would be far past either.
fn kld_from_exact_ratio_limit(file: &str) -> f64 {
    if file == GEMMA3 {
        0.6
    } else {
        1.1
    }
}
/// Largest KLD of llama.cpp against taper's exact path (measured 0.0040 SmolLM2, 0.0053 Gemma
/// 3 on 20 windows): llama.cpp's own rounding and nothing more, so the exact path computes
/// the model as llama.cpp does.
const LLAMA_CPP_FROM_EXACT_LIMIT: f64 = 0.01;

#[test]
fn every_kernel_path_is_about_as_faithful_to_the_exact_path_as_llama_cpp() {
    let bin = llama_cpp_bin();
    for file in [SMOLLM2, GEMMA3] {
        let model = real_model(file);
        let dir = tempfile::tempdir().expect("tempdir");
        let exact = dir.path().join("exact.kld");
        let exact_arg = exact.to_str().expect("utf-8");
        taper(
            &model,
            &["--cache-type", "f32", "--kl-divergence-base", exact_arg],
            &[("TAPER_KERNELS", "exact")],
        );
        // llama.cpp reads the base file taper wrote (its own format) and compares with it.
        let out = llama_perplexity(
            &bin,
            &model,
            &["--kl-divergence-base", exact_arg, "--kl-divergence"],
        );
        let llama = reported(&out, "Mean    KLD");
        assert!(llama < LLAMA_CPP_FROM_EXACT_LIMIT, "{file}: {llama}");
        for path in kernel_paths() {
            let (kld, _, _) = taper_kld(&model, &exact, &[("TAPER_KERNELS", path)]);
            eprintln!("{file}: KLD from exact: taper {path} {kld:.6}, llama.cpp {llama:.6}");
            assert!(
                kld <= kld_from_exact_ratio_limit(file) * llama,
                "{file} {path}: {kld} against llama.cpp's {llama}"
            );
        }
    }
}
