//! One decoder-only transformer for every supported architecture, configured from metadata.
//!
//! The architectures differ in small ways (biases, fused projections, per-head norms, sandwich
//! norms, sliding windows, GELU vs SiLU, Gemma 4's per-layer inputs and shared KV), so they
//! share one forward pass ([`super::layer`]) that reads each architecture's row of
//! [`super::arch::RECIPES`], rather than six copies of it.

use super::arch::config::ModelConfig;
use super::kv_cache::{CacheType, KvCache};
use super::layer::{Layer, LayerContext, Segment};
use super::rope::Rope;
use super::runtime::scratch::{PassScratch, Pooled};
use super::vecmath;
use super::weights::embedding::RowTable;
use super::weights::linear::QLinear;
use super::weights::WeightFile;
use anyhow::{bail, Context, Result};

/// Gemma 4's per-layer token inputs: for each token, one small vector per layer, from a
/// token-indexed table (kept in the mapped file: it is larger than the rest of the model) and
/// a projection of the token's embedding.
struct PerLayerEmbedding {
    /// `(n_layer × width)` values per token.
    table: RowTable,
    /// n_embd → n_layer × width.
    model_proj: QLinear,
    /// Normalises each layer's `width` slice of the projection.
    proj_norm: Vec<f32>,
    width: usize,
}

/// One sequence of a batched pass: the tokens to feed after what its cache holds.
pub struct SlotStep<'c> {
    pub cache: &'c mut KvCache,
    pub tokens: &'c [u32],
    /// The logits of every token fed, not only the last one's (a speculative step verifies
    /// each drafted position).
    pub all_logits: bool,
}

pub struct Decoder {
    cfg: ModelConfig,
    token_embd: RowTable,
    /// Tied embeddings whose output head is repacked: look tokens up in the head's copy.
    embed_from_head: bool,
    per_layer: Option<PerLayerEmbedding>,
    layers: Vec<Layer>,
    output_norm: Vec<f32>,
    output: QLinear,
    rope: Rope,
    rope_swa: Rope,
    cache: KvCache,
    /// The buffers of a pass, kept for the next one.
    scratch: PassScratch,
}

impl Decoder {
    /// Loads the weights and prepares a cache of `context_size` positions in `cache_type`.
    pub fn load(
        cfg: ModelConfig,
        weights: &WeightFile,
        context_size: usize,
        cache_type: CacheType,
    ) -> Result<Self> {
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
        let embed_from_head = output_name == "token_embd.weight" && output.q8_0_x16().is_some();
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
        let cache = KvCache::new(
            &cfg.cache_head_dims()?,
            cfg.n_head_kv,
            context_size,
            cache_type,
        )?;
        Ok(Self {
            output_norm: weights.vector("output_norm.weight", e)?,
            token_embd,
            embed_from_head,
            per_layer,
            layers,
            output,
            rope,
            rope_swa,
            cache,
            cfg,
            scratch: PassScratch::default(),
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
            Some(name) => Some(weights.vector(name, pairs)?),
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

    /// A second KV cache of the same size and format, empty: a server's slot.
    pub fn new_cache(&self) -> Result<KvCache> {
        KvCache::new(
            &self.cfg.cache_head_dims()?,
            self.cfg.n_head_kv,
            self.cache.capacity(),
            self.cache.kind(),
        )
    }

    /// Feeds `tokens` after the cached positions. Returns row-major logits `rows × vocab`: one
    /// row per token when `all_logits`, else only the last token's.
    pub fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>> {
        // The pass borrows the weights and a cache apart: the model's own cache is lent out
        // for it (an empty cache has no layers and allocates nothing).
        let empty = KvCache::new(&[], 0, 0, self.cache.kind())?;
        let mut cache = std::mem::replace(&mut self.cache, empty);
        let mut steps = [SlotStep {
            cache: &mut cache,
            tokens,
            all_logits,
        }];
        let result = self.pass(&mut steps);
        self.cache = cache;
        result
    }

    /// One pass over several sequences, each fed its `tokens` after what its own cache holds
    /// (a batched decode step: one token per slot; a new slot's prefill chunk may ride
    /// along). The matmuls read the weights once for all rows; attention runs per sequence.
    /// Returns the logits of each step's last token (of every token, for a step that wants
    /// all), row-major in order. Every row is computed as it would be alone (the kernels are
    /// batch-invariant).
    pub fn forward_batch(&mut self, steps: &mut [SlotStep]) -> Result<Vec<f32>> {
        self.pass(steps)
    }

    /// The forward pass: each step's last row of logits, or all its rows when it wants them.
    ///
    /// The pass runs on one of the compute pool's own threads. Called from outside the pool,
    /// each of a pass's few hundred parallel steps (matmuls, attention) would be handed in
    /// from the outside and the caller put to sleep until it was done: two thread wake-ups
    /// per step, a third of a decode step's time on SmolLM2. From inside, the thread running
    /// the pass takes its share of every step and the others steal theirs, and the caller
    /// waits once per pass. The other workers are kept awake for the pass
    /// ([`super::runtime::awake`]), so that they do not fall asleep between two steps either.
    fn pass(&self, steps: &mut [SlotStep]) -> Result<Vec<f32>> {
        let mut pass = || super::runtime::awake::with_workers_awake(|| self.pass_in_pool(steps));
        if rayon::current_thread_index().is_some() {
            return pass();
        }
        // `join` from outside the pool runs both closures on pool threads.
        rayon::join(pass, || ()).0
    }

    fn pass_in_pool(&self, steps: &mut [SlotStep]) -> Result<Vec<f32>> {
        let mut tokens = Vec::new();
        for step in steps.iter() {
            if step.tokens.is_empty() {
                bail!("forward called with no tokens");
            }
            step.cache.reserve(step.tokens.len())?;
            tokens.extend_from_slice(step.tokens);
        }
        if tokens.is_empty() {
            bail!("forward called with no tokens");
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= self.cfg.vocab_size) {
            bail!(
                "token id {bad} is outside the vocabulary ({})",
                self.cfg.vocab_size
            );
        }
        let (t, e) = (tokens.len(), self.cfg.n_embd);
        let mut x = if self.embed_from_head {
            let (e, rows) = (self.cfg.n_embd, self.cfg.vocab_size);
            super::weights::embedding::lookup_packed_q8_0(&self.output, e, rows, &tokens)?
        } else {
            self.token_embd.lookup(&tokens)?
        };
        if let Some(scale) = self.cfg.embed_scale {
            vecmath::scale(&mut x, scale);
        }
        let per_layer = match &self.per_layer {
            Some(ple) => Some(self.per_layer_inputs(ple, &tokens, &x)?),
            None => None,
        };
        let spans: Vec<(usize, usize)> = steps
            .iter()
            .map(|s| (s.cache.len(), s.tokens.len()))
            .collect();
        let rope = self.rope.table_for(&spans);
        let rope_swa = self.rope_swa.table_for(&spans);
        let mut segments: Vec<Segment> = steps
            .iter_mut()
            .map(|s| Segment {
                start: s.cache.len(),
                tokens: s.tokens.len(),
                cache: &mut *s.cache,
            })
            .collect();
        for (il, layer) in self.layers.iter().enumerate() {
            let ctx = LayerContext {
                cfg: &self.cfg,
                rope: if layer.sliding() { &rope_swa } else { &rope },
                segments: &mut segments,
                per_layer_input: per_layer.as_ref().map(|p| p.layer(&self.scratch, il)),
                scratch: &self.scratch,
            };
            layer.forward(il, &mut x, ctx)?;
        }
        for seg in segments.iter_mut() {
            seg.cache.commit(seg.tokens);
        }
        let wanted: Vec<bool> = steps.iter().map(|s| s.all_logits).collect();
        let x = if wanted.iter().all(|&w| w) {
            x
        } else {
            // The last row of each step, every row of a step that wants them all.
            let mut kept = Vec::with_capacity(steps.len() * e);
            let mut end = 0;
            for (&(_, n), &all) in spans.iter().zip(&wanted) {
                let first = if all { end } else { end + n - 1 };
                end += n;
                kept.extend_from_slice(&x[first * e..end * e]);
            }
            kept
        };
        let rows = x.len() / e;
        debug_assert!(rows >= steps.len() && rows <= t);
        let mut x = x;
        vecmath::rms_norm_rows(&mut x, e, Some(&self.output_norm), self.cfg.rms_eps);
        // The logits leave the pass, so they are not taken from the pool: a pooled buffer
        // handed out would be one the next pass has to allocate and fault in again.
        let mut logits = self.output.forward_rows(&x, rows)?;
        if let Some(cap) = self.cfg.final_softcap {
            vecmath::softcap(&mut logits, cap);
        }
        Ok(logits)
    }

    /// Gemma 4: each token's inputs for every layer, the mean (scaled by 1/√2) of the token's
    /// table row (scaled by √width) and the normalised projection of its embedding `x`.
    fn per_layer_inputs(
        &self,
        ple: &PerLayerEmbedding,
        tokens: &[u32],
        x: &[f32],
    ) -> Result<PerLayerInputs<'_>> {
        let (t, n_layer, w) = (tokens.len(), self.cfg.n_layer, ple.width);
        let mut from_table = ple.table.lookup(tokens)?;
        vecmath::scale(&mut from_table, (w as f32).sqrt());
        let isa = super::runtime::kernel_path::isa();
        let mut projected = ple.model_proj.forward_rows_in(&self.scratch, isa, x, t)?;
        vecmath::scale(&mut projected, 1.0 / (self.cfg.n_embd as f32).sqrt());
        vecmath::rms_norm_rows(&mut projected, w, Some(&ple.proj_norm), self.cfg.rms_eps);
        vecmath::add_assign(&mut projected, &from_table);
        vecmath::scale(&mut projected, std::f32::consts::FRAC_1_SQRT_2);
        Ok(PerLayerInputs {
            values: projected,
            n_layer,
            width: w,
        })
    }
}

/// Gemma 4's per-layer inputs of one pass: `(tokens, n_layer, width)` row-major.
struct PerLayerInputs<'s> {
    values: Pooled<'s, f32>,
    n_layer: usize,
    width: usize,
}

impl PerLayerInputs<'_> {
    /// Layer `il`'s inputs, `(tokens, width)`.
    fn layer<'s>(&self, scratch: &'s PassScratch, il: usize) -> Pooled<'s, f32> {
        let w = self.width;
        let mut out = scratch.floats.take(self.values.len() / self.n_layer);
        let tokens = self.values.chunks_exact(self.n_layer * w);
        for (dst, token) in out.chunks_exact_mut(w).zip(tokens) {
            dst.copy_from_slice(&token[il * w..(il + 1) * w]);
        }
        out
    }
}
