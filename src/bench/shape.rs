//! Shape-only model files: a GGUF with random weights but exactly a catalogue entry's
//! architecture, dimensions, vocabulary size and per-tensor quantization mix.
//!
//! The file carries every metadata key the decoder reads (src/engine/model/config.rs), with
//! the types and names llama.cpp expects for that architecture, and
//! `tokenizer.ggml.model = "no_vocab"` (llama.cpp then adds dummy tokens), so the same file
//! can be measured by other runtimes side by side. Its speed and memory are the real model's;
//! its text is noise.

use super::fill::{self, Fill};
use super::quant::{file_type, role_type};
use crate::catalog::{CatalogEntry, ModelShape};
use crate::engine::gguf::writer::GgufWriter;
use crate::engine::gguf::MetaValue;
use anyhow::{anyhow, bail, Context, Result};
use candle_core::quantized::GgmlDType;
use std::path::Path;

/// What a shape-only file is built from: a catalogue entry, or a hand-made shape in tests.
#[derive(Debug, Clone, Copy)]
pub struct ShapeSource<'a> {
    pub name: &'a str,
    /// `general.architecture`.
    pub architecture: &'a str,
    /// The quantization the mix stands for (`Q4_K_M`), for `general.file_type`.
    pub quantization: &'a str,
    pub shape: &'a ModelShape,
}

impl<'a> ShapeSource<'a> {
    /// A catalogue entry; the models taper cannot run are refused with the entry's reason.
    pub fn from_entry(entry: &'a CatalogEntry) -> Result<Self> {
        if !entry.supported {
            bail!(
                "{} ({}) is a {} model, which taper cannot run yet: {}. There is nothing to \
                 benchmark its shape with.",
                entry.name,
                entry.display_name,
                entry.architecture,
                entry.unsupported_reason
            );
        }
        Ok(Self {
            name: &entry.name,
            architecture: &entry.architecture,
            quantization: &entry.quantization,
            shape: &entry.shape,
        })
    }
}

/// The file's description (metadata, tensor directory) and how each tensor is filled.
pub struct ShapePlan {
    pub writer: GgufWriter,
    /// One per tensor, in the writer's order.
    pub fills: Vec<Fill>,
}

pub(super) fn extra_str<'s>(shape: &'s ModelShape, key: &str) -> Option<&'s str> {
    shape.extra.get(key).and_then(|v| v.as_str())
}

pub(super) fn extra_f64(shape: &ModelShape, key: &str) -> Option<f64> {
    let v = shape.extra.get(key)?;
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

pub(super) fn extra_usize(shape: &ModelShape, key: &str) -> Option<usize> {
    shape.extra.get(key)?.as_integer().map(|i| i as usize)
}

pub(super) fn u32_of(n: usize) -> MetaValue {
    MetaValue::U32(n as u32)
}

/// Builds the metadata and tensor directory of the shape-only file.
pub fn plan(src: ShapeSource) -> Result<ShapePlan> {
    let s = src.shape;
    let arch = src.architecture;
    let fused = match arch {
        "llama" | "qwen2" | "qwen3" | "gemma3" | "gemma4" => false,
        "phi3" => true,
        other => bail!("shape-only files of the {other:?} architecture are not supported"),
    };
    if s.layers == 0 || s.heads == 0 || s.kv_heads == 0 || !s.heads.is_multiple_of(s.kv_heads) {
        bail!(
            "inconsistent shape: {} layers, {}/{} heads",
            s.layers,
            s.heads,
            s.kv_heads
        );
    }
    let mut b = Builder {
        src,
        plan: ShapePlan {
            writer: metadata(src),
            fills: Vec::new(),
        },
    };
    let embd = b.matrix_type("token_embd", None)?;
    b.add(
        "token_embd.weight",
        embd,
        &[s.hidden, s.vocab],
        Fill::Random,
    )?;
    if arch == "gemma4" {
        super::shape_gemma4::add_gemma4(&mut b)?;
        b.vector("output_norm.weight", s.hidden, Fill::Ones)?;
        return Ok(b.plan);
    }
    b.rope_scaling()?;
    for il in 0..s.layers {
        b.layer(il, fused)?;
    }
    b.vector("output_norm.weight", s.hidden, Fill::Ones)?;
    if !s.tied_embeddings {
        let out = b.matrix_type("output", None)?;
        b.add("output.weight", out, &[s.hidden, s.vocab], Fill::Random)?;
    }
    Ok(b.plan)
}

/// Every metadata key the decoder (and llama.cpp) reads for the shape's architecture.
fn metadata(src: ShapeSource) -> GgufWriter {
    let (s, arch) = (src.shape, src.architecture);
    let mut w = GgufWriter::new();
    let key = |suffix: &str| format!("{arch}.{suffix}");
    w.set("general.architecture", MetaValue::String(arch.into()));
    w.set(
        "general.name",
        MetaValue::String(format!("shape-only {}", src.name)),
    );
    w.set("general.alignment", MetaValue::U32(32));
    w.set("general.quantization_version", MetaValue::U32(2));
    if let Some(ft) = file_type(src.quantization) {
        w.set("general.file_type", MetaValue::U32(ft));
    }
    // llama.cpp's typed getters are strict: integers are u32, floats f32.
    w.set(&key("vocab_size"), u32_of(s.vocab));
    w.set(&key("context_length"), u32_of(s.context));
    w.set(&key("embedding_length"), u32_of(s.hidden));
    w.set(&key("block_count"), u32_of(s.layers));
    if arch != "gemma4" {
        w.set(&key("feed_forward_length"), u32_of(s.ffn));
    }
    w.set(&key("attention.head_count"), u32_of(s.heads));
    w.set(&key("attention.head_count_kv"), u32_of(s.kv_heads));
    if !s.hidden.is_multiple_of(s.heads) || s.head_dim != s.hidden / s.heads {
        w.set(&key("attention.key_length"), u32_of(s.head_dim));
        w.set(&key("attention.value_length"), u32_of(s.head_dim));
    }
    w.set(&key("rope.freq_base"), MetaValue::F32(s.rope_theta as f32));
    if arch != "gemma4" {
        w.set(&key("rope.dimension_count"), u32_of(s.rope_dim));
    }
    w.set(
        &key("attention.layer_norm_rms_epsilon"),
        MetaValue::F32(s.rms_eps as f32),
    );
    if arch == "gemma3" {
        w.set(
            &key("attention.sliding_window"),
            u32_of(s.sliding_window.max(1)),
        );
        let local = extra_f64(s, "rope_local_theta").unwrap_or(10_000.0);
        w.set(&key("rope.freq_base_swa"), MetaValue::F32(local as f32));
    }
    if let Some(window) = extra_usize(s, "config_sliding_window") {
        // Phi-3's converter writes the window llama.cpp (and taper) ignore; so does this file.
        w.set(&key("attention.sliding_window"), u32_of(window));
    }
    w.set("tokenizer.ggml.model", MetaValue::String("no_vocab".into()));
    w
}

pub(super) struct Builder<'a> {
    pub(super) src: ShapeSource<'a>,
    pub(super) plan: ShapePlan,
}

impl Builder<'_> {
    /// The rope scaling tensors (and keys) of Llama 3's and Phi's long-context variants.
    fn rope_scaling(&mut self) -> Result<()> {
        let (s, arch) = (self.src.shape, self.src.architecture);
        let half_rot = s.rope_dim / 2;
        match extra_str(s, "rope_scaling") {
            None => {}
            Some("llama3") => {
                let factors = fill::llama3_rope_factors(
                    s.rope_theta,
                    s.rope_dim,
                    extra_f64(s, "rope_scaling_factor").unwrap_or(8.0),
                    extra_usize(s, "rope_original_context").unwrap_or(8192),
                );
                self.vector("rope_freqs.weight", half_rot, Fill::Values(factors))?;
            }
            Some("longrope") => {
                let original = extra_usize(s, "rope_original_context").unwrap_or(4096);
                let w = &mut self.plan.writer;
                w.set(
                    &format!("{arch}.rope.scaling.original_context_length"),
                    u32_of(original),
                );
                // The converter's attention factor: sqrt(1 + ln(scale) / ln(original)).
                let scale = s.context as f64 / original as f64;
                let attn_factor = if scale > 1.0 {
                    (1.0 + scale.ln() / (original as f64).ln()).sqrt()
                } else {
                    1.0
                };
                w.set(
                    &format!("{arch}.rope.scaling.attn_factor"),
                    MetaValue::F32(attn_factor as f32),
                );
                let (long, short) = fill::longrope_factors(half_rot);
                self.vector("rope_factors_long.weight", half_rot, Fill::Values(long))?;
                self.vector("rope_factors_short.weight", half_rot, Fill::Values(short))?;
            }
            Some(other) => bail!("{}: rope scaling {other:?} is not supported", self.src.name),
        }
        Ok(())
    }

    /// The tensors of decoder layer `il` (every architecture but Gemma 4's).
    fn layer(&mut self, il: usize, fused: bool) -> Result<()> {
        let (s, arch) = (self.src.shape, self.src.architecture);
        let (q_width, kv_width) = (s.heads * s.head_dim, s.kv_heads * s.head_dim);
        let name = |t: &str| format!("blk.{il}.{t}");
        self.vector(&name("attn_norm.weight"), s.hidden, Fill::Ones)?;
        if fused || s.fused_qkv {
            self.dense(il, "attn_qkv", &[s.hidden, q_width + 2 * kv_width])?;
        } else {
            self.dense(il, "attn_q", &[s.hidden, q_width])?;
            self.dense(il, "attn_k", &[s.hidden, kv_width])?;
            self.dense(il, "attn_v", &[s.hidden, kv_width])?;
        }
        if s.qkv_bias {
            self.vector(&name("attn_q.bias"), q_width, Fill::Small)?;
            self.vector(&name("attn_k.bias"), kv_width, Fill::Small)?;
            self.vector(&name("attn_v.bias"), kv_width, Fill::Small)?;
        }
        if s.qk_norm {
            self.vector(&name("attn_q_norm.weight"), s.head_dim, Fill::Ones)?;
            self.vector(&name("attn_k_norm.weight"), s.head_dim, Fill::Ones)?;
        }
        self.dense(il, "attn_output", &[q_width, s.hidden])?;
        if arch == "gemma3" {
            self.vector(&name("post_attention_norm.weight"), s.hidden, Fill::Ones)?;
        }
        self.vector(&name("ffn_norm.weight"), s.hidden, Fill::Ones)?;
        if fused || s.fused_gate_up {
            // Phi-3: ffn_up holds the gate in its first half and the up projection in its second.
            self.dense(il, "ffn_up", &[s.hidden, 2 * s.ffn])?;
        } else {
            self.dense(il, "ffn_gate", &[s.hidden, s.ffn])?;
            self.dense(il, "ffn_up", &[s.hidden, s.ffn])?;
        }
        self.dense(il, "ffn_down", &[s.ffn, s.hidden])?;
        if arch == "gemma3" {
            self.vector(&name("post_ffw_norm.weight"), s.hidden, Fill::Ones)?;
        }
        Ok(())
    }

    pub(super) fn add(
        &mut self,
        name: &str,
        dtype: GgmlDType,
        dims: &[usize],
        fill: Fill,
    ) -> Result<()> {
        self.plan
            .writer
            .add_tensor(name, dtype, dims)
            .with_context(|| format!("{} shape: tensor {name}", self.src.name))?;
        self.plan.fills.push(fill);
        Ok(())
    }

    /// Norms, biases and rope factors: f32, as every converter writes them.
    pub(super) fn vector(&mut self, name: &str, len: usize, fill: Fill) -> Result<()> {
        self.add(name, GgmlDType::F32, &[len], fill)
    }

    pub(super) fn matrix_type(&self, role: &str, layer: Option<usize>) -> Result<GgmlDType> {
        role_type(self.src.shape, role, layer)
            .with_context(|| format!("{} shape", self.src.name))?
            .ok_or_else(|| anyhow!("{} shape: {role} is marked \"tied\"", self.src.name))
    }

    /// A weight matrix of a layer, `blk.{layer}.{role}.weight`, in the quant mix's type.
    pub(super) fn dense(&mut self, layer: usize, role: &str, dims: &[usize]) -> Result<()> {
        let dtype = self.matrix_type(role, Some(layer))?;
        self.add(
            &format!("blk.{layer}.{role}.weight"),
            dtype,
            dims,
            Fill::Random,
        )
    }
}

/// Writes the shape-only file to `path`; returns its size in bytes. A partly written file is
/// removed on failure.
pub fn write_shape_file(src: ShapeSource, path: &Path) -> Result<u64> {
    let plan = plan(src)?;
    let result = fill::write(&plan, path);
    if result.is_err() {
        let _ = std::fs::remove_file(path);
    }
    result.with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
