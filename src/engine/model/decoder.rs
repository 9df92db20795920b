//! One decoder-only transformer for every supported architecture, configured from metadata.
//!
//! The architectures differ in small ways (biases, fused projections, per-head norms, sandwich
//! norms, sliding windows, GELU vs SiLU), so they share one forward pass with options rather
//! than five copies of it.

use super::attention::{attention, AttentionShape};
use super::config::{Arch, ModelConfig};
use super::kv_cache::KvCache;
use super::linear::QLinear;
use super::rope::Rope;
use super::weights::WeightFile;
use anyhow::{bail, Context, Result};
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
}

enum FfnProj {
    Separate {
        gate: QLinear,
        up: QLinear,
    },
    /// Phi-3: `ffn_up` yields the gate in its first half and the up projection in its second.
    Fused(QLinear),
}

struct Layer {
    attn_norm: Tensor,
    qkv: QkvProj,
    /// Qwen2's projection biases.
    qkv_bias: Option<(Tensor, Tensor, Tensor)>,
    /// Qwen3 and Gemma normalise each head of Q and K.
    qk_norm: Option<(Tensor, Tensor)>,
    attn_out: QLinear,
    /// Gemma's "sandwich" norms after attention and after the feed-forward.
    post_attn_norm: Option<Tensor>,
    ffn_norm: Tensor,
    ffn: FfnProj,
    ffn_down: QLinear,
    post_ffn_norm: Option<Tensor>,
    sliding: bool,
}

pub struct Decoder {
    cfg: ModelConfig,
    token_embd: std::sync::Arc<candle_core::quantized::QTensor>,
    layers: Vec<Layer>,
    output_norm: Tensor,
    output: QLinear,
    rope: Rope,
    rope_swa: Rope,
    cache: KvCache,
}

impl Decoder {
    /// Loads the weights and prepares a cache of `context_size` positions.
    pub fn load(cfg: ModelConfig, weights: &WeightFile, context_size: usize) -> Result<Self> {
        let (e, hd) = (cfg.n_embd, cfg.head_dim);
        let (q_width, kv_width) = (cfg.n_head * hd, cfg.n_head_kv * hd);
        let mut layers = Vec::with_capacity(cfg.n_layer);
        let matrix = |name: &str, cols_in: usize, rows_out: usize| -> Result<QLinear> {
            Ok(QLinear::from_qmatmul(
                weights.matrix(name, cols_in, rows_out)?,
            )?)
        };
        for il in 0..cfg.n_layer {
            let name = |t: &str| format!("blk.{il}.{t}");
            let layer = (|| -> Result<Layer> {
                let qkv = if weights.has(&name("attn_qkv.weight")) {
                    QkvProj::Fused(matrix(&name("attn_qkv.weight"), e, q_width + 2 * kv_width)?)
                } else {
                    QkvProj::Separate {
                        q: matrix(&name("attn_q.weight"), e, q_width)?,
                        k: matrix(&name("attn_k.weight"), e, kv_width)?,
                        v: matrix(&name("attn_v.weight"), e, kv_width)?,
                    }
                };
                let qkv_bias = match weights.optional_vector(&name("attn_q.bias"), q_width)? {
                    Some(qb) => Some((
                        qb,
                        weights.vector(&name("attn_k.bias"), kv_width)?,
                        weights.vector(&name("attn_v.bias"), kv_width)?,
                    )),
                    None => None,
                };
                let qk_norm = match weights.optional_vector(&name("attn_q_norm.weight"), hd)? {
                    Some(qn) => Some((qn, weights.vector(&name("attn_k_norm.weight"), hd)?)),
                    None => None,
                };
                let ffn = if cfg.arch == Arch::Phi3 {
                    FfnProj::Fused(matrix(&name("ffn_up.weight"), e, 2 * cfg.n_ff)?)
                } else {
                    FfnProj::Separate {
                        gate: matrix(&name("ffn_gate.weight"), e, cfg.n_ff)?,
                        up: matrix(&name("ffn_up.weight"), e, cfg.n_ff)?,
                    }
                };
                Ok(Layer {
                    attn_norm: weights.vector(&name("attn_norm.weight"), e)?,
                    qkv,
                    qkv_bias,
                    qk_norm,
                    attn_out: matrix(&name("attn_output.weight"), q_width, e)?,
                    post_attn_norm: weights
                        .optional_vector(&name("post_attention_norm.weight"), e)?,
                    ffn_norm: weights.vector(&name("ffn_norm.weight"), e)?,
                    ffn,
                    ffn_down: matrix(&name("ffn_down.weight"), cfg.n_ff, e)?,
                    post_ffn_norm: weights.optional_vector(&name("post_ffw_norm.weight"), e)?,
                    sliding: cfg.swa_layers[il],
                })
            })()
            .with_context(|| format!("layer {il}"))?;
            layers.push(layer);
        }
        let token_embd = weights.qtensor("token_embd.weight")?;
        // Tied embeddings: without `output.weight` the embedding matrix is the output head.
        let output = if weights.has("output.weight") {
            matrix("output.weight", e, cfg.vocab_size)?
        } else {
            QLinear::from_arc(token_embd.clone())?
        };
        let (rope, rope_swa) = Self::ropes(&cfg, weights, context_size)?;
        let cache = KvCache::new(cfg.n_layer, cfg.n_head_kv, hd, context_size);
        Ok(Self {
            output_norm: weights.vector("output_norm.weight", e)?,
            token_embd,
            layers,
            output,
            rope,
            rope_swa,
            cache,
            cfg,
        })
    }

    /// Frequency factors: Llama 3's `rope_freqs`, or Phi-3's LongRoPE short/long pair, chosen
    /// (as llama.cpp does) by whether the context exceeds the original training context.
    fn ropes(cfg: &ModelConfig, weights: &WeightFile, context_size: usize) -> Result<(Rope, Rope)> {
        let pairs = cfg.rope.n_rot / 2;
        let factor_tensor = if weights.has("rope_factors_long.weight") {
            Some(if context_size > cfg.rope_original_context {
                "rope_factors_long.weight"
            } else {
                "rope_factors_short.weight"
            })
        } else if weights.has("rope_freqs.weight") {
            Some("rope_freqs.weight")
        } else {
            None
        };
        let factors = match factor_tensor {
            Some(name) => Some(weights.vector(name, pairs)?.to_vec1::<f32>()?),
            None => None,
        };
        Ok((
            Rope::new(&cfg.rope, factors.as_deref()),
            Rope::new(&cfg.rope_swa, None),
        ))
    }

    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    pub fn cache(&self) -> &KvCache {
        &self.cache
    }

    pub fn cache_mut(&mut self) -> &mut KvCache {
        &mut self.cache
    }

    /// Feeds `tokens` after the cached positions. Returns logits `(rows, vocab)`: one row per
    /// token when `all_logits`, else only the last token's.
    pub fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Tensor> {
        if tokens.is_empty() {
            bail!("forward called with no tokens");
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= self.cfg.vocab_size) {
            bail!(
                "token id {bad} is outside the vocabulary ({})",
                self.cfg.vocab_size
            );
        }
        self.cache.reserve(tokens.len())?;
        let start = self.cache.len();
        let ids = Tensor::new(tokens, &Device::Cpu)?;
        let mut x = self.token_embd.embedding(&ids)?;
        if let Some(scale) = self.cfg.embed_scale {
            x = (x * scale as f64)?;
        }
        for il in 0..self.layers.len() {
            x = self.layer_forward(il, &x, start)?;
        }
        self.cache.commit(tokens.len());
        let x = if all_logits {
            x
        } else {
            x.narrow(0, tokens.len() - 1, 1)?
        };
        let x = rms_norm(&x, &self.output_norm, self.cfg.rms_eps)?;
        Ok(self.output.forward(&x)?)
    }

    fn layer_forward(&mut self, il: usize, x: &Tensor, start: usize) -> Result<Tensor> {
        let cfg = &self.cfg;
        let layer = &self.layers[il];
        let t = x.dim(0)?;
        let (hd, nh, nkv) = (cfg.head_dim, cfg.n_head, cfg.n_head_kv);
        let n = rms_norm(x, &layer.attn_norm, cfg.rms_eps)?;
        let (mut q, mut k, mut v) = match &layer.qkv {
            QkvProj::Separate { q, k, v } => (q.forward(&n)?, k.forward(&n)?, v.forward(&n)?),
            QkvProj::Fused(qkv) => {
                let all = qkv.forward(&n)?;
                (
                    all.narrow(1, 0, nh * hd)?,
                    all.narrow(1, nh * hd, nkv * hd)?,
                    all.narrow(1, (nh + nkv) * hd, nkv * hd)?,
                )
            }
        };
        if let Some((qb, kb, vb)) = &layer.qkv_bias {
            q = q.broadcast_add(qb)?;
            k = k.broadcast_add(kb)?;
            v = v.broadcast_add(vb)?;
        }
        let mut q = q.contiguous()?.reshape((t, nh, hd))?;
        let mut k = k.contiguous()?.reshape((t, nkv, hd))?;
        if let Some((qn, kn)) = &layer.qk_norm {
            q = rms_norm(&q, qn, cfg.rms_eps)?;
            k = rms_norm(&k, kn, cfg.rms_eps)?;
        }
        let rope = if layer.sliding {
            &self.rope_swa
        } else {
            &self.rope
        };
        let mut q = q.flatten_all()?.to_vec1::<f32>()?;
        let mut k = k.flatten_all()?.to_vec1::<f32>()?;
        let v = v.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        rope.rotate(&mut q, nh, hd, start);
        rope.rotate(&mut k, nkv, hd, start);
        let shape = AttentionShape {
            heads: nh,
            kv_heads: nkv,
            head_dim: hd,
            capacity: self.cache.capacity(),
            start,
            window: layer.sliding.then_some(cfg.sliding_window).flatten(),
            scale: cfg.attn_scale,
        };
        let layer_cache = self.cache.append(il, &k, &v);
        let attn = Tensor::from_vec(
            attention(&q, layer_cache, shape),
            (t, nh * hd),
            &Device::Cpu,
        )?;
        let cfg = &self.cfg;
        let layer = &self.layers[il];
        let mut a = layer.attn_out.forward(&attn)?;
        if let Some(norm) = &layer.post_attn_norm {
            a = rms_norm(&a, norm, cfg.rms_eps)?;
        }
        let x = (x + a)?;
        let m = rms_norm(&x, &layer.ffn_norm, cfg.rms_eps)?;
        let (gate, up) = match &layer.ffn {
            FfnProj::Separate { gate, up } => (gate.forward(&m)?, up.forward(&m)?),
            FfnProj::Fused(up) => {
                let both = up.forward(&m)?;
                (
                    both.narrow(1, 0, cfg.n_ff)?,
                    both.narrow(1, cfg.n_ff, cfg.n_ff)?,
                )
            }
        };
        let gate = if cfg.arch.uses_gelu() {
            gate.gelu()?
        } else {
            gate.silu()?
        };
        let mut f = layer.ffn_down.forward(&(gate * up)?)?;
        if let Some(norm) = &layer.post_ffn_norm {
            f = rms_norm(&f, norm, cfg.rms_eps)?;
        }
        Ok((x + f)?)
    }
}
