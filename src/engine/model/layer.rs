//! One transformer block: attention over the KV cache, then the feed-forward, with the options
//! the supported architectures switch on (biases, fused projections, per-head norms, sandwich
//! norms, Gemma 4's shared KV and per-layer inputs).

use super::attention::{attention, AttentionShape};
use super::config::{Arch, ModelConfig};
use super::kv_cache::KvCache;
use super::linear::QLinear;
use super::rope::Rope;
use super::vecmath;
use super::weights::WeightFile;
use anyhow::Result;
use candle_core::{Device, Tensor};
use candle_nn::ops::rms_norm;

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
    post_norm: Tensor,
}

pub struct Layer {
    attn_norm: Tensor,
    qkv: QkvProj,
    /// Qwen2's projection biases.
    qkv_bias: Option<(Tensor, Tensor, Tensor)>,
    /// Qwen3 and Gemma normalise each head of Q and K (KV-shared layers have no K to norm).
    q_norm: Option<Tensor>,
    k_norm: Option<Tensor>,
    /// Gemma 4 also normalises each head of V, without a weight (a vector of ones here).
    v_norm: Option<Tensor>,
    attn_out: QLinear,
    /// Gemma's "sandwich" norms after attention and after the feed-forward.
    post_attn_norm: Option<Tensor>,
    ffn_norm: Tensor,
    ffn: FfnProj,
    ffn_down: QLinear,
    post_ffn_norm: Option<Tensor>,
    per_layer_input: Option<PerLayerInput>,
    /// Gemma 4 scales the whole hidden state at the end of each layer.
    output_scale: Option<f32>,
    sliding: bool,
    head_dim: usize,
    n_ff: usize,
    /// The layer whose KV cache this one reads (itself unless KV-shared).
    kv_source: usize,
}

/// What a layer needs besides its own weights.
pub struct LayerContext<'a> {
    pub cfg: &'a ModelConfig,
    pub rope: &'a Rope,
    pub cache: &'a mut KvCache,
    /// Position of the first token of this pass.
    pub start: usize,
    /// Gemma 4: this layer's per-layer input, `(tokens, width)`.
    pub per_layer_input: Option<Tensor>,
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
        let v_norm = (cfg.arch == Arch::Gemma4)
            .then(|| Tensor::ones(hd, candle_core::DType::F32, &Device::Cpu))
            .transpose()?;
        let ffn = if cfg.arch == Arch::Phi3 {
            FfnProj::Fused(weights.linear(&name("ffn_up.weight"), e, 2 * n_ff)?)
        } else {
            FfnProj::Separate {
                gate: weights.linear(&name("ffn_gate.weight"), e, n_ff)?,
                up: weights.linear(&name("ffn_up.weight"), e, n_ff)?,
            }
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
            Some(s) => Some(s.to_vec1::<f32>()?[0]),
            None => None,
        };
        Ok(Self {
            attn_norm: weights.vector(&name("attn_norm.weight"), e)?,
            qkv,
            qkv_bias,
            q_norm,
            k_norm,
            v_norm,
            attn_out: weights.linear(&name("attn_output.weight"), q_width, e)?,
            post_attn_norm: weights.optional_vector(&name("post_attention_norm.weight"), e)?,
            ffn_norm: weights.vector(&name("ffn_norm.weight"), e)?,
            ffn,
            ffn_down: weights.linear(&name("ffn_down.weight"), n_ff, e)?,
            post_ffn_norm: weights.optional_vector(&name("post_ffw_norm.weight"), e)?,
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

    /// The head size of this layer's own KV cache, or `None` when it reads another layer's.
    pub fn own_cache_head_dim(&self, il: usize) -> Option<usize> {
        (self.kv_source == il).then_some(self.head_dim)
    }

    /// `x` is `(tokens, n_embd)`; returns the layer's output, same shape.
    pub fn forward(&self, il: usize, x: &Tensor, ctx: LayerContext) -> Result<Tensor> {
        let cfg = ctx.cfg;
        let t = x.dim(0)?;
        let (hd, nh, nkv) = (self.head_dim, cfg.n_head, cfg.n_head_kv);
        let n = rms_norm(x, &self.attn_norm, cfg.rms_eps)?;
        let (q, kv) = match &self.qkv {
            QkvProj::Separate { q, k, v } => {
                (q.forward(&n)?, Some((k.forward(&n)?, v.forward(&n)?)))
            }
            QkvProj::Fused(qkv) => {
                let all = qkv.forward(&n)?;
                (
                    all.narrow(1, 0, nh * hd)?,
                    Some((
                        all.narrow(1, nh * hd, nkv * hd)?,
                        all.narrow(1, (nh + nkv) * hd, nkv * hd)?,
                    )),
                )
            }
            QkvProj::QueryOnly(q) => (q.forward(&n)?, None),
        };
        let (q, kv) = match (&self.qkv_bias, kv) {
            (Some((qb, kb, vb)), Some((k, v))) => (
                q.broadcast_add(qb)?,
                Some((k.broadcast_add(kb)?, v.broadcast_add(vb)?)),
            ),
            (_, kv) => (q, kv),
        };
        let mut q = q.contiguous()?.reshape((t, nh, hd))?;
        if let Some(qn) = &self.q_norm {
            q = rms_norm(&q, qn, cfg.rms_eps)?;
        }
        let mut q = q.flatten_all()?.to_vec1::<f32>()?;
        ctx.rope.rotate(&mut q, nh, hd, ctx.start);
        if let Some((k, v)) = kv {
            let mut k = k.contiguous()?.reshape((t, nkv, hd))?;
            if let Some(kn) = &self.k_norm {
                k = rms_norm(&k, kn, cfg.rms_eps)?;
            }
            let mut v = v.contiguous()?.reshape((t, nkv, hd))?;
            if let Some(ones) = &self.v_norm {
                v = rms_norm(&v, ones, cfg.rms_eps)?;
            }
            let mut k = k.flatten_all()?.to_vec1::<f32>()?;
            let v = v.flatten_all()?.to_vec1::<f32>()?;
            ctx.rope.rotate(&mut k, nkv, hd, ctx.start);
            ctx.cache.append(il, &k, &v)?;
        }
        let shape = AttentionShape {
            heads: nh,
            kv_heads: nkv,
            head_dim: hd,
            capacity: ctx.cache.capacity(),
            start: ctx.start,
            window: self.sliding.then_some(cfg.sliding_window).flatten(),
            scale: cfg.attn_scale,
        };
        // A KV-shared layer reads its source's cache, which already holds this pass's tokens
        // (the source layer ran earlier in the same pass).
        let attn = attention(&q, ctx.cache.layer(self.kv_source)?, shape);
        let attn = Tensor::from_vec(attn, (t, nh * hd), &Device::Cpu)?;
        let mut a = self.attn_out.forward(&attn)?;
        if let Some(norm) = &self.post_attn_norm {
            a = rms_norm(&a, norm, cfg.rms_eps)?;
        }
        let x = (x + a)?;
        let mut x = (&x + self.feed_forward(&x, cfg)?)?;
        if let (Some(pli), Some(input)) = (&self.per_layer_input, &ctx.per_layer_input) {
            let g = gated(&pli.gate.forward(&x)?, input, true)?;
            let mixed = rms_norm(&pli.proj.forward(&g)?, &pli.post_norm, cfg.rms_eps)?;
            x = (x + mixed)?;
        }
        if let Some(scale) = self.output_scale {
            x = (x * scale as f64)?;
        }
        Ok(x)
    }

    fn feed_forward(&self, x: &Tensor, cfg: &ModelConfig) -> Result<Tensor> {
        let m = rms_norm(x, &self.ffn_norm, cfg.rms_eps)?;
        let (gate, up) = match &self.ffn {
            FfnProj::Separate { gate, up } => (gate.forward(&m)?, up.forward(&m)?),
            FfnProj::Fused(up) => {
                let both = up.forward(&m)?;
                (
                    both.narrow(1, 0, self.n_ff)?,
                    both.narrow(1, self.n_ff, self.n_ff)?,
                )
            }
        };
        let mut f = self
            .ffn_down
            .forward(&gated(&gate, &up, cfg.arch.uses_gelu())?)?;
        if let Some(norm) = &self.post_ffn_norm {
            f = rms_norm(&f, norm, cfg.rms_eps)?;
        }
        Ok(f)
    }
}

/// `act(gate) ⊙ up`, with GELU (tanh form) or SiLU as `act`: one vectorised pass instead of
/// candle's separate activation and product.
fn gated(gate: &Tensor, up: &Tensor, gelu: bool) -> Result<Tensor> {
    let shape = gate.dims().to_vec();
    let mut g = gate.flatten_all()?.to_vec1::<f32>()?;
    let u = up.flatten_all()?.to_vec1::<f32>()?;
    if g.len() != u.len() {
        anyhow::bail!("gate and up projections differ in size");
    }
    if gelu {
        vecmath::gelu_mul(&mut g, &u);
    } else {
        vecmath::silu_mul(&mut g, &u);
    }
    Ok(Tensor::from_vec(g, shape, &Device::Cpu)?)
}
