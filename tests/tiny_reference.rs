//! The decoder against llama.cpp's logits on tiny random-weight GGUF files
//! (../shared/reference/tiny), batched and one token at a time.

mod common;

use serde_json::Value;
use taper::engine::gguf::GgufHeader;
use taper::engine::model::{self, LanguageModel};

struct Reference {
    tokens: Vec<u32>,
    logits: Vec<Vec<f32>>,
    greedy: Vec<u32>,
    context: usize,
}

fn reference(json_name: &str, use_dequantized_twin: bool) -> (Reference, String) {
    let path = common::reference_dir().join("tiny").join(json_name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).expect("reference JSON parses");
    let ids = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    let (logits_key, greedy_key) = if use_dequantized_twin {
        (
            "logits_dequantized_f32_model",
            "greedy_continuation_dequantized_f32_model",
        )
    } else {
        ("logits", "greedy_continuation")
    };
    let logits = v[logits_key]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect();
    let r = Reference {
        tokens: ids(&v["tokens"]),
        logits,
        greedy: ids(&v[greedy_key]),
        context: v["run"]["n_ctx_requested"].as_u64().unwrap() as usize,
    };
    (r, v["model_file"].as_str().unwrap().to_string())
}

fn load(file: &str, context: usize) -> Box<dyn LanguageModel> {
    let path = common::reference_dir().join("tiny").join(file);
    let header = GgufHeader::read(&path).expect("header");
    model::load(&header, context).expect("model loads")
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best as u32
}

/// Batched logits, incremental logits and the greedy continuation, each within `tol`.
fn check(json_name: &str, twin: bool, tol: f32) {
    let (r, file) = reference(json_name, twin);
    let mut m = load(&file, r.context);
    let batched = m
        .forward(&r.tokens, true)
        .unwrap()
        .to_vec2::<f32>()
        .unwrap();
    let mut worst = 0f32;
    for (pos, (got, want)) in batched.iter().zip(&r.logits).enumerate() {
        let d = max_diff(got, want);
        worst = worst.max(d);
        assert!(
            d <= tol,
            "{json_name}: batched logits at position {pos} differ by {d} > {tol}"
        );
    }
    // Greedy continuation from the batched state.
    let mut next = argmax(batched.last().unwrap());
    let mut greedy = vec![next];
    for _ in 1..r.greedy.len() {
        let l = m.forward(&[next], false).unwrap().to_vec2::<f32>().unwrap();
        next = argmax(&l[0]);
        greedy.push(next);
    }
    assert_eq!(greedy, r.greedy, "{json_name}: greedy continuation");
    // One token at a time from an empty cache.
    m.truncate_cache(0);
    for (pos, &tok) in r.tokens.iter().enumerate() {
        let l = m.forward(&[tok], false).unwrap().to_vec2::<f32>().unwrap();
        let d = max_diff(&l[0], &r.logits[pos]);
        worst = worst.max(d);
        assert!(
            d <= tol,
            "{json_name}: incremental logits at position {pos} differ by {d} > {tol}"
        );
    }
    eprintln!("{json_name}: max |Δ| {worst:.2e} (tolerance {tol:.0e})");
}

#[test]
fn llama_f32_matches_llama_cpp() {
    check("llama_f32.json", false, 1e-4);
}

#[test]
fn qwen2_f32_matches_llama_cpp() {
    check("qwen2_f32.json", false, 1e-4);
}

#[test]
fn qwen3_f32_matches_llama_cpp() {
    check("qwen3_f32.json", false, 1e-4);
}

#[test]
fn phi3_mini_f32_matches_llama_cpp() {
    check("phi3_mini_f32.json", false, 1e-4);
}

#[test]
fn phi4_mini_style_phi3_matches_llama_cpp_with_short_factors() {
    check("phi3_phi4mini_f32.json", false, 1e-4);
}

#[test]
fn phi4_mini_style_phi3_matches_llama_cpp_with_long_factors() {
    check("phi3_phi4mini_f32_ctx8192.json", false, 1e-4);
}

#[test]
fn gemma3_f32_matches_llama_cpp() {
    check("gemma3_f32.json", false, 1e-3);
}

// Quantized files: candle, like ggml, quantizes activations before the matmul, so the
// comparison is with llama.cpp's own quantized logits at the README's 5e-2.
#[test]
fn llama_q8_0_matches_llama_cpp() {
    check("llama_q8_0.json", false, 5e-2);
}

#[test]
fn llama_q4_0_matches_llama_cpp() {
    check("llama_q4_0.json", false, 5e-2);
}

#[test]
fn llama_q4_k_matches_llama_cpp() {
    check("llama_q4_k.json", false, 5e-2);
}

#[test]
fn qwen3_q8_0_matches_llama_cpp() {
    check("qwen3_q8_0.json", false, 5e-2);
}

#[test]
fn qwen3_q4_0_matches_llama_cpp() {
    check("qwen3_q4_0.json", false, 5e-2);
}

#[test]
fn qwen3_q4_k_matches_llama_cpp() {
    check("qwen3_q4_k.json", false, 5e-2);
}
