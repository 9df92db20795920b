//! Shape-only files of Gemma 4's E-series layout: per-layer head sizes, KV-shared layers,
//! per-layer token inputs, per-layer FFN widths and proportional RoPE on global layers, with
//! the keys and tensor names llama.cpp's `gemma4` loader reads.

use super::fill::Fill;
use super::shape::{extra_f64, extra_usize, u32_of, Builder};
use crate::engine::gguf::MetaValue;
use anyhow::{anyhow, bail, Result};

/// The per-layer list `key` of the shape (`global_layers`, `ffn_per_layer`).
fn extra_list(b: &Builder, key: &str) -> Result<Vec<usize>> {
    let values = b
        .src
        .shape
        .extra
        .get(key)
        .and_then(|v| v.as_array())
        .ok_or_else(|| anyhow!("{} shape: {key} is missing", b.src.name))?;
    values
        .iter()
        .map(|v| v.as_integer().and_then(|i| usize::try_from(i).ok()))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| anyhow!("{} shape: {key} is not a list of sizes", b.src.name))
}

/// Adds Gemma 4's metadata and tensors to a plan whose common metadata is already set.
pub(super) fn add_gemma4(b: &mut Builder) -> Result<()> {
    let s = b.src.shape;
    let name = b.src.name;
    let need =
        |key: &str| extra_usize(s, key).ok_or_else(|| anyhow!("{name} shape: {key} is missing"));
    let global_head = need("global_head_dim")?;
    let global_rot = need("global_rope_dim")?;
    let ple = need("per_layer_embedding_dim")?;
    let shared = need("kv_shared_layers")?;
    let global_layers = extra_list(b, "global_layers")?;
    let ffn = match extra_list(b, "ffn_per_layer") {
        Ok(list) => list,
        Err(_) => vec![s.ffn; s.layers],
    };
    if ffn.len() != s.layers || shared >= s.layers || global_rot > global_head {
        bail!("{name} shape: inconsistent per-layer sizes");
    }
    let sliding: Vec<bool> = (0..s.layers)
        .map(|il| !global_layers.contains(&il))
        .collect();
    let arch = b.src.architecture;
    let key = |suffix: &str| format!("{arch}.{suffix}");
    let w = &mut b.plan.writer;
    w.set(
        &key("feed_forward_length"),
        MetaValue::Array(ffn.iter().map(|&f| u32_of(f)).collect()),
    );
    w.set(&key("attention.key_length"), u32_of(global_head));
    w.set(&key("attention.value_length"), u32_of(global_head));
    w.set(&key("rope.dimension_count"), u32_of(global_head));
    w.set(&key("attention.key_length_swa"), u32_of(s.head_dim));
    w.set(&key("attention.value_length_swa"), u32_of(s.head_dim));
    w.set(&key("rope.dimension_count_swa"), u32_of(s.rope_dim));
    let local = extra_f64(s, "rope_local_theta").unwrap_or(10_000.0);
    w.set(&key("rope.freq_base_swa"), MetaValue::F32(local as f32));
    w.set(
        &key("attention.sliding_window"),
        u32_of(s.sliding_window.max(1)),
    );
    w.set(
        &key("attention.sliding_window_pattern"),
        MetaValue::Array(sliding.iter().map(|&f| MetaValue::Bool(f)).collect()),
    );
    w.set(&key("attention.shared_kv_layers"), u32_of(shared));
    w.set(&key("embedding_length_per_layer_input"), u32_of(ple));
    if let Some(cap) = extra_f64(s, "final_logit_softcap") {
        w.set(&key("final_logit_softcapping"), MetaValue::F32(cap as f32));
    }

    per_layer_inputs(b, ple, global_head, global_rot)?;
    for il in 0..s.layers {
        let hd = if sliding[il] { s.head_dim } else { global_head };
        layer(b, il, hd, ffn[il], ple, il < s.layers - shared)?;
    }
    Ok(())
}

/// The per-layer token inputs' table and projection, and the proportional RoPE factors.
fn per_layer_inputs(
    b: &mut Builder,
    ple: usize,
    global_head: usize,
    global_rot: usize,
) -> Result<()> {
    let s = b.src.shape;
    let per_layer_total = ple * s.layers;
    let table = b.matrix_type("per_layer_token_embd", None)?;
    b.add(
        "per_layer_token_embd.weight",
        table,
        &[per_layer_total, s.vocab],
        Fill::Random,
    )?;
    let proj = b.matrix_type("per_layer_model_proj", None)?;
    b.add(
        "per_layer_model_proj.weight",
        proj,
        &[s.hidden, per_layer_total],
        Fill::Random,
    )?;
    b.vector("per_layer_proj_norm.weight", ple, Fill::Ones)?;
    // Proportional RoPE: the global layers rotate only their first `global_rot` dimensions,
    // expressed (as the converter does) by huge frequency divisors for the other pairs.
    let pairs = global_head / 2;
    let factors = (0..pairs)
        .map(|i| if i < global_rot / 2 { 1.0 } else { 1e30 })
        .collect();
    b.vector("rope_freqs.weight", pairs, Fill::Values(factors))
}

/// The tensors of layer `il`: heads of `hd`, a feed-forward of `ffn`, K and V of its own
/// unless it shares another layer's cache.
fn layer(
    b: &mut Builder,
    il: usize,
    hd: usize,
    ffn: usize,
    ple: usize,
    own_kv: bool,
) -> Result<()> {
    let s = b.src.shape;
    let tensor = |t: &str| format!("blk.{il}.{t}");
    let (q_width, kv_width) = (s.heads * hd, s.kv_heads * hd);
    b.vector(&tensor("attn_norm.weight"), s.hidden, Fill::Ones)?;
    b.dense(il, "attn_q", &[s.hidden, q_width])?;
    b.vector(&tensor("attn_q_norm.weight"), hd, Fill::Ones)?;
    if own_kv {
        b.dense(il, "attn_k", &[s.hidden, kv_width])?;
        b.dense(il, "attn_v", &[s.hidden, kv_width])?;
        b.vector(&tensor("attn_k_norm.weight"), hd, Fill::Ones)?;
    }
    b.dense(il, "attn_output", &[q_width, s.hidden])?;
    b.vector(&tensor("post_attention_norm.weight"), s.hidden, Fill::Ones)?;
    b.vector(&tensor("ffn_norm.weight"), s.hidden, Fill::Ones)?;
    b.dense(il, "ffn_gate", &[s.hidden, ffn])?;
    b.dense(il, "ffn_up", &[s.hidden, ffn])?;
    b.dense(il, "ffn_down", &[ffn, s.hidden])?;
    b.vector(&tensor("post_ffw_norm.weight"), s.hidden, Fill::Ones)?;
    let gate = b.matrix_type("per_layer_inp_gate", Some(il))?;
    b.add(
        &tensor("inp_gate.weight"),
        gate,
        &[s.hidden, ple],
        Fill::Random,
    )?;
    let back = b.matrix_type("per_layer_proj", Some(il))?;
    b.add(&tensor("proj.weight"), back, &[ple, s.hidden], Fill::Random)?;
    b.vector(&tensor("post_norm.weight"), s.hidden, Fill::Ones)?;
    b.vector(&tensor("layer_output_scale.weight"), 1, Fill::Ones)
}
