//! One transformer block: attention over the KV cache, then the feed-forward. What differs
//! between architectures is their row of [`super::arch::RECIPES`] (read once, at load) or a
//! part the file has (biases, fused projections, per-head norms, sandwich norms, Gemma 4's
//! shared KV and per-layer inputs).

use super::arch::{Activation, FfnStorage, ModelConfig};
use super::attention::{attention_into, AttentionShape};
use super::kernels::Isa;
use super::kv_cache::KvCache;
use super::rope::RopeTable;
use super::runtime::kernel_path;
use super::runtime::scratch::{PassScratch, Pooled};
use super::vecmath;
use super::weights::linear::{forward_group_in, QLinear};
use super::weights::WeightFile;
use anyhow::Result;

enum QkvProj {
    Separate {
        q: QLinear,
        k: QLinear,
        v: QLinear,
    },
    /// Phi-3: one matrix whose output rows are Q, then K, then V.
    Fused(QLinear),
    /// Gemma 4's KV-shared layers: only queries; keys and values come from another layer.
    QueryOnly(QLinear),
}

enum FfnProj {
    Separate {
        gate: QLinear,
        up: QLinear,
    },
    /// Phi-3: `ffn_up` yields the gate in its first half and the up projection in its second.
    Fused(QLinear),
}

/// Gemma 4: after the feed-forward, each layer mixes in its slice of the per-layer token input.
struct PerLayerInput {
    /// n_embd → per-layer width, GELU-gated by the layer's input slice.
    gate: QLinear,
    /// Back to n_embd.
    proj: QLinear,
    post_norm: Vec<f32>,
}

pub struct Layer {
    attn_norm: Vec<f32>,
    qkv: QkvProj,
    /// Qwen2's projection biases.
    qkv_bias: Option<(Vec<f32>, Vec<f32>, Vec<f32>)>,
    /// Qwen3 and Gemma normalise each head of Q and K (KV-shared layers have no K to norm).
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    /// Each head of V normalised, without a weight (the architecture's row: Gemma 4).
    v_norm: bool,
    attn_out: QLinear,
    /// Gemma's "sandwich" norms after attention and after the feed-forward.
    post_attn_norm: Option<Vec<f32>>,
    ffn_norm: Vec<f32>,
    ffn: FfnProj,
    ffn_down: QLinear,
    post_ffn_norm: Option<Vec<f32>>,
    /// The feed-forward's gate activation (the architecture's row).
    activation: Activation,
    per_layer_input: Option<PerLayerInput>,
    /// Gemma 4 scales the whole hidden state at the end of each layer.
    output_scale: Option<f32>,
    sliding: bool,
    head_dim: usize,
    n_ff: usize,
    /// The layer whose KV cache this one reads (itself unless KV-shared).
    kv_source: usize,
}

/// One sequence's rows of a pass: `tokens` consecutive rows of the pass's input, at
/// positions `start..` of the sequence whose keys and values `cache` holds. A pass over one
/// conversation has one segment; a batched decode step has one per slot.
pub struct Segment<'c> {
    pub cache: &'c mut KvCache,
    pub start: usize,
    pub tokens: usize,
}

/// What a layer needs besides its own weights.
pub struct LayerContext<'a, 'c> {
    pub cfg: &'a ModelConfig,
    /// The rotations of this pass's positions (every segment's, in row order) for this kind
    /// of layer.
    pub rope: &'a RopeTable,
    /// The sequences of this pass, in row order.
    pub segments: &'a mut [Segment<'c>],
    /// Gemma 4: this layer's per-layer input, `(tokens, width)` row-major.
    pub per_layer_input: Option<Pooled<'a, f32>>,
    /// Where the pass's activations live (reused pass after pass).
    pub scratch: &'a PassScratch,
}

impl Layer {
    pub fn load(cfg: &ModelConfig, weights: &WeightFile, il: usize) -> Result<Self> {
        let name = |t: &str| format!("blk.{il}.{t}");
        let e = cfg.n_embd;
        let hd = cfg.layer_head_dim(il);
        let n_ff = cfg.n_ff[il];
        let (q_width, kv_width) = (cfg.n_head * hd, cfg.n_head_kv * hd);
        let kv_source = cfg.kv_source(il)?;
        let qkv = if weights.has(&name("attn_qkv.weight")) {
            QkvProj::Fused(weights.linear(&name("attn_qkv.weight"), e, q_width + 2 * kv_width)?)
        } else if kv_source != il {
            QkvProj::QueryOnly(weights.linear(&name("attn_q.weight"), e, q_width)?)
        } else {
            QkvProj::Separate {
                q: weights.linear(&name("attn_q.weight"), e, q_width)?,
                k: weights.linear(&name("attn_k.weight"), e, kv_width)?,
                v: weights.linear(&name("attn_v.weight"), e, kv_width)?,
            }
        };
        if kv_source != il && cfg.layer_head_dim(kv_source) != hd {
            anyhow::bail!(
                "layer {il} shares the KV cache of layer {kv_source}, whose heads differ"
            );
        }
        let qkv_bias = match weights.optional_vector(&name("attn_q.bias"), q_width)? {
            Some(qb) => Some((
                qb,
                weights.vector(&name("attn_k.bias"), kv_width)?,
                weights.vector(&name("attn_v.bias"), kv_width)?,
            )),
            None => None,
        };
        let q_norm = weights.optional_vector(&name("attn_q_norm.weight"), hd)?;
        let k_norm = weights.optional_vector(&name("attn_k_norm.weight"), hd)?;
        let recipe = cfg.arch.recipe();
        let ffn = match recipe.ffn {
            FfnStorage::FusedGateUp => {
                FfnProj::Fused(weights.linear(&name("ffn_up.weight"), e, 2 * n_ff)?)
            }
            FfnStorage::Separate => FfnProj::Separate {
                gate: weights.linear(&name("ffn_gate.weight"), e, n_ff)?,
                up: weights.linear(&name("ffn_up.weight"), e, n_ff)?,
            },
        };
        let per_layer_input = if cfg.per_layer_input > 0 {
            let width = cfg.per_layer_input;
            Some(PerLayerInput {
                gate: weights.linear(&name("inp_gate.weight"), e, width)?,
                proj: weights.linear(&name("proj.weight"), width, e)?,
                post_norm: weights.vector(&name("post_norm.weight"), e)?,
            })
        } else {
            None
        };
        let output_scale = match weights.optional_vector(&name("layer_output_scale.weight"), 1)? {
            Some(s) => s.first().copied(),
            None => None,
        };
        Ok(Self {
            attn_norm: weights.vector(&name("attn_norm.weight"), e)?,
            qkv,
            qkv_bias,
            q_norm,
            k_norm,
            v_norm: recipe.value_norm,
            attn_out: weights.linear(&name("attn_output.weight"), q_width, e)?,
            post_attn_norm: weights.optional_vector(&name("post_attention_norm.weight"), e)?,
            ffn_norm: weights.vector(&name("ffn_norm.weight"), e)?,
            ffn,
            ffn_down: weights.linear(&name("ffn_down.weight"), n_ff, e)?,
            post_ffn_norm: weights.optional_vector(&name("post_ffw_norm.weight"), e)?,
            activation: recipe.activation,
            per_layer_input,
            output_scale,
            sliding: cfg.swa_layers[il],
            head_dim: hd,
            n_ff,
            kv_source,
        })
    }

    pub fn sliding(&self) -> bool {
        self.sliding
    }

    /// `x` is `(tokens, n_embd)` row-major; the layer's output replaces it.
    pub fn forward(&self, il: usize, x: &mut [f32], ctx: LayerContext) -> Result<()> {
        let cfg = ctx.cfg;
        let eps = cfg.rms_eps;
        let e = cfg.n_embd;
        let t = x.len() / e;
        let (hd, nh, nkv) = (self.head_dim, cfg.n_head, cfg.n_head_kv);
        let (scratch, isa) = (ctx.scratch, kernel_path::isa());
        let mut n = scratch.floats.copy_of(x);
        vecmath::rms_norm_rows(&mut n, e, Some(&self.attn_norm), eps);
        let (mut q, kv) = match &self.qkv {
            QkvProj::Separate { q, k, v } => {
                let [q, k, v] = three(forward_group_in(scratch, isa, &[q, k, v], &n, t)?)?;
                (q, Some((k, v)))
            }
            QkvProj::Fused(qkv) => {
                let all = qkv.forward_rows_in(scratch, isa, &n, t)?;
                let widths = [nh * hd, nkv * hd, nkv * hd];
                let [q, k, v] = split_columns(scratch, &all, widths);
                (q, Some((k, v)))
            }
            QkvProj::QueryOnly(q) => (q.forward_rows_in(scratch, isa, &n, t)?, None),
        };
        drop(n);
        if let Some((qb, _, _)) = &self.qkv_bias {
            vecmath::add_to_rows(&mut q, qb);
        }
        if let Some(qn) = &self.q_norm {
            vecmath::rms_norm_rows(&mut q, hd, Some(qn), eps);
        }
        ctx.rope.rotate(&mut q, nh, hd);
        if let Some((mut k, mut v)) = kv {
            if let Some((_, kb, vb)) = &self.qkv_bias {
                vecmath::add_to_rows(&mut k, kb);
                vecmath::add_to_rows(&mut v, vb);
            }
            if let Some(kn) = &self.k_norm {
                vecmath::rms_norm_rows(&mut k, hd, Some(kn), eps);
            }
            if self.v_norm {
                vecmath::rms_norm_rows(&mut v, hd, None, eps);
            }
            ctx.rope.rotate(&mut k, nkv, hd);
            let width = nkv * hd;
            let mut row = 0;
            for seg in ctx.segments.iter_mut() {
                let rows = row * width..(row + seg.tokens) * width;
                seg.cache.append(il, &k[rows.clone()], &v[rows])?;
                row += seg.tokens;
            }
        }
        let attn = self.attend(scratch, &q, ctx.segments, cfg)?;
        drop(q);
        let mut a = self.attn_out.forward_rows_in(scratch, isa, &attn, t)?;
        drop(attn);
        if let Some(norm) = &self.post_attn_norm {
            vecmath::rms_norm_rows(&mut a, e, Some(norm), eps);
        }
        vecmath::add_assign(x, &a);
        drop(a);
        let f = self.feed_forward(scratch, isa, x, t, cfg)?;
        vecmath::add_assign(x, &f);
        drop(f);
        if let (Some(pli), Some(input)) = (&self.per_layer_input, &ctx.per_layer_input) {
            let mut g = pli.gate.forward_rows_in(scratch, isa, x, t)?;
            if g.len() != input.len() {
                anyhow::bail!("per-layer input has the wrong size");
            }
            vecmath::gelu_mul(&mut g, input);
            let mut mixed = pli.proj.forward_rows_in(scratch, isa, &g, t)?;
            vecmath::rms_norm_rows(&mut mixed, e, Some(&pli.post_norm), eps);
            vecmath::add_assign(x, &mixed);
        }
        if let Some(scale) = self.output_scale {
            vecmath::scale(x, scale);
        }
        Ok(())
    }

    /// Attention of each segment's queries against its own cache; rows in the order of `q`.
    /// A sequence's rows never meet another sequence's keys, so a batched step computes
    /// exactly what the sequence stepped alone would.
    fn attend<'s>(
        &self,
        scratch: &'s PassScratch,
        q: &[f32],
        segments: &[Segment],
        cfg: &ModelConfig,
    ) -> Result<Pooled<'s, f32>> {
        let width = cfg.n_head * self.head_dim;
        let mut out = scratch.floats.take(q.len());
        let mut row = 0;
        for seg in segments.iter() {
            let shape = AttentionShape {
                heads: cfg.n_head,
                kv_heads: cfg.n_head_kv,
                head_dim: self.head_dim,
                capacity: seg.cache.capacity(),
                start: seg.start,
                window: self.sliding.then_some(cfg.sliding_window).flatten(),
                scale: cfg.attn_scale,
            };
            let span = row * width..(row + seg.tokens) * width;
            // A KV-shared layer reads its source's cache, which already holds this pass's
            // tokens (the source layer ran earlier in the same pass).
            let cache = seg.cache.layer(self.kv_source)?;
            attention_into(&q[span.clone()], cache, shape, &mut out[span]);
            row += seg.tokens;
        }
        Ok(out)
    }

    fn feed_forward<'s>(
        &self,
        scratch: &'s PassScratch,
        isa: Isa,
        x: &[f32],
        t: usize,
        cfg: &ModelConfig,
    ) -> Result<Pooled<'s, f32>> {
        let mut m = scratch.floats.copy_of(x);
        vecmath::rms_norm_rows(&mut m, cfg.n_embd, Some(&self.ffn_norm), cfg.rms_eps);
        let (mut gate, up) = match &self.ffn {
            FfnProj::Separate { gate, up } => {
                let [gate, up] = two(forward_group_in(scratch, isa, &[gate, up], &m, t)?)?;
                (gate, up)
            }
            FfnProj::Fused(up) => {
                let both = up.forward_rows_in(scratch, isa, &m, t)?;
                let [gate, up] = split_columns(scratch, &both, [self.n_ff, self.n_ff]);
                (gate, up)
            }
        };
        drop(m);
        match self.activation {
            Activation::Gelu => vecmath::gelu_mul(&mut gate, &up),
            Activation::Silu => vecmath::silu_mul(&mut gate, &up),
        }
        drop(up);
        let mut f = self.ffn_down.forward_rows_in(scratch, isa, &gate, t)?;
        if let Some(norm) = &self.post_ffn_norm {
            vecmath::rms_norm_rows(&mut f, cfg.n_embd, Some(norm), cfg.rms_eps);
        }
        Ok(f)
    }
}

/// Splits each row of `all` (rows of `Σ widths`) into `N` row-major matrices of `widths[i]`
/// columns: the parts of a fused projection.
fn split_columns<'s, const N: usize>(
    scratch: &'s PassScratch,
    all: &[f32],
    widths: [usize; N],
) -> [Pooled<'s, f32>; N] {
    let row: usize = widths.iter().sum();
    let rows = all.len() / row;
    let mut parts: [Pooled<f32>; N] =
        std::array::from_fn(|i| scratch.floats.take(rows * widths[i]));
    for (r, src) in all.chunks_exact(row).enumerate() {
        let mut at = 0;
        for (part, &w) in parts.iter_mut().zip(&widths) {
            part[r * w..(r + 1) * w].copy_from_slice(&src[at..at + w]);
            at += w;
        }
    }
    parts
}

fn three(v: Vec<Pooled<f32>>) -> Result<[Pooled<f32>; 3]> {
    <[Pooled<f32>; 3]>::try_from(v).map_err(|_| anyhow::anyhow!("expected three projections"))
}

fn two(v: Vec<Pooled<f32>>) -> Result<[Pooled<f32>; 2]> {
    <[Pooled<f32>; 2]>::try_from(v).map_err(|_| anyhow::anyhow!("expected two projections"))
}
