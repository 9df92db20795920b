//! One decoder-only transformer for every supported architecture, configured from metadata.
//!
//! The architectures differ in small ways (biases, fused projections, per-head norms, sandwich
//! norms, sliding windows, GELU vs SiLU, Gemma 4's per-layer inputs and shared KV), so they
//! share one forward pass with options ([`super::layer`]) rather than six copies of it.

use super::config::ModelConfig;
use super::embedding::RowTable;
use super::kv_cache::KvCache;
use super::layer::{Layer, LayerContext};
use super::linear::QLinear;
use super::rope::Rope;
use super::weights::WeightFile;
use anyhow::{bail, Context, Result};
use candle_core::{Device, Tensor};
use candle_nn::ops::rms_norm;

/// Gemma 4's per-layer token inputs: for each token, one small vector per layer, from a
/// token-indexed table (kept in the mapped file: it is larger than the rest of the model) and
/// a projection of the token's embedding.
struct PerLayerEmbedding {
    /// `(n_layer × width)` values per token.
    table: RowTable,
    /// n_embd → n_layer × width.
    model_proj: QLinear,
    /// Normalises each layer's `width` slice of the projection.
    proj_norm: Tensor,
    width: usize,
}

pub struct Decoder {
    cfg: ModelConfig,
    token_embd: RowTable,
    per_layer: Option<PerLayerEmbedding>,
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
        let e = cfg.n_embd;
        let layers = (0..cfg.n_layer)
            .map(|il| Layer::load(&cfg, weights, il).with_context(|| format!("layer {il}")))
            .collect::<Result<Vec<_>>>()?;
        let token_embd = weights.rows("token_embd.weight", e, cfg.vocab_size)?;
        // Tied embeddings: without `output.weight` the embedding matrix is the output head.
        let output_name = if weights.has("output.weight") {
            "output.weight"
        } else {
            "token_embd.weight"
        };
        let output = weights.linear(output_name, e, cfg.vocab_size)?;
        let per_layer = if cfg.per_layer_input > 0 {
            let width = cfg.per_layer_input;
            let total = width * cfg.n_layer;
            Some(PerLayerEmbedding {
                table: weights.rows("per_layer_token_embd.weight", total, cfg.vocab_size)?,
                model_proj: weights.linear("per_layer_model_proj.weight", e, total)?,
                proj_norm: weights.vector("per_layer_proj_norm.weight", width)?,
                width,
            })
        } else {
            None
        };
        let (rope, rope_swa) = Self::ropes(&cfg, weights, context_size)?;
        let head_dims: Vec<Option<usize>> = layers
            .iter()
            .enumerate()
            .map(|(il, layer)| layer.own_cache_head_dim(il))
            .collect();
        let cache = KvCache::new(&head_dims, cfg.n_head_kv, context_size);
        Ok(Self {
            output_norm: weights.vector("output_norm.weight", e)?,
            token_embd,
            per_layer,
            layers,
            output,
            rope,
            rope_swa,
            cache,
            cfg,
        })
    }

    /// Frequency factors: Llama 3's and Gemma 4's `rope_freqs`, or Phi-3's LongRoPE short/long
    /// pair, chosen (as llama.cpp does) by whether the context exceeds the original training
    /// context. They apply to global layers only.
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
        let t = tokens.len();
        let embd = self.token_embd.lookup(tokens)?;
        let mut x = Tensor::from_vec(embd, (t, self.cfg.n_embd), &Device::Cpu)?;
        if let Some(scale) = self.cfg.embed_scale {
            x = (x * scale as f64)?;
        }
        let per_layer = match &self.per_layer {
            Some(ple) => Some(self.per_layer_inputs(ple, tokens, &x)?),
            None => None,
        };
        for (il, layer) in self.layers.iter().enumerate() {
            let ctx = LayerContext {
                cfg: &self.cfg,
                rope: if layer.sliding() {
                    &self.rope_swa
                } else {
                    &self.rope
                },
                cache: &mut self.cache,
                start,
                per_layer_input: match &per_layer {
                    Some(p) => Some(p.narrow(1, il, 1)?.squeeze(1)?),
                    None => None,
                },
            };
            x = layer.forward(il, &x, ctx)?;
        }
        self.cache.commit(t);
        let x = if all_logits {
            x
        } else {
            x.narrow(0, t - 1, 1)?
        };
        let x = rms_norm(&x, &self.output_norm, self.cfg.rms_eps)?;
        let logits = self.output.forward(&x)?;
        Ok(match self.cfg.final_softcap {
            Some(cap) => ((logits / cap as f64)?.tanh()? * cap as f64)?,
            None => logits,
        })
    }

    /// Gemma 4: `(tokens, n_layer, width)` inputs, the mean (scaled by 1/√2) of the token's
    /// table row and the normalised projection of its embedding `x`.
    fn per_layer_inputs(
        &self,
        ple: &PerLayerEmbedding,
        tokens: &[u32],
        x: &Tensor,
    ) -> Result<Tensor> {
        let (t, n_layer, w) = (tokens.len(), self.cfg.n_layer, ple.width);
        let rows = ple.table.lookup(tokens)?;
        let from_table =
            (Tensor::from_vec(rows, (t, n_layer, w), &Device::Cpu)? * (w as f64).sqrt())?;
        let projected = (ple.model_proj.forward(x)? / (self.cfg.n_embd as f64).sqrt())?;
        let projected = rms_norm(
            &projected.reshape((t, n_layer, w))?,
            &ple.proj_norm,
            self.cfg.rms_eps,
        )?;
        Ok(((projected + from_table)? * std::f64::consts::FRAC_1_SQRT_2)?.contiguous()?)
    }
}
