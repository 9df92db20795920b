//! The shape of a decoder, read from GGUF metadata: which architecture (its row of
//! [`super::recipe::RECIPES`]), how big, which options.

use super::recipe::{Arch, RopeStyle, ScoreScale};
use crate::engine::gguf::GgufHeader;
use anyhow::{anyhow, bail, Result};

/// How positions are rotated into Q and K for one kind of layer.
#[derive(Debug, Clone, PartialEq)]
pub struct RopeConfig {
    pub base: f32,
    /// Multiplies positions (1 / linear scaling factor).
    pub freq_scale: f32,
    /// How many of the head's dimensions rotate (partial rotary when < head_dim).
    pub n_rot: usize,
    /// NeoX pairs dimension i with i + n_rot/2; "normal" (llama) pairs 2i with 2i+1.
    pub neox: bool,
    /// Multiplies cos and sin (LongRoPE's attention factor).
    pub attn_factor: f32,
}

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub arch: Arch,
    pub arch_name: String,
    pub n_layer: usize,
    pub n_embd: usize,
    pub n_head: usize,
    pub n_head_kv: usize,
    /// Head size of global layers (and of every layer but Gemma 4's sliding ones).
    pub head_dim: usize,
    /// Head size of sliding-window layers (Gemma 4 makes them narrower).
    pub head_dim_swa: usize,
    /// Feed-forward width of each layer (Gemma 4 varies it per layer).
    pub n_ff: Vec<usize>,
    pub vocab_size: usize,
    /// The context length the model was trained for.
    pub context_length: usize,
    pub rms_eps: f32,
    /// Rotary embedding of global (full-attention) layers.
    pub rope: RopeConfig,
    /// Rotary embedding of sliding-window layers (Gemma 3 uses another base).
    pub rope_swa: RopeConfig,
    /// LongRoPE: contexts longer than this use the "long" frequency factors.
    pub rope_original_context: usize,
    pub sliding_window: Option<usize>,
    /// One flag per layer: true when the layer attends through the sliding window.
    pub swa_layers: Vec<bool>,
    /// Multiplies the token embeddings (Gemma: sqrt(n_embd)).
    pub embed_scale: Option<f32>,
    pub attn_scale: f32,
    /// Gemma 4: the last this many layers have no K/V of their own and attend to the cache of
    /// the last earlier layer of the same kind (sliding or global).
    pub shared_kv_layers: usize,
    /// Gemma 4: width of the per-layer token input each layer receives (0 = none).
    pub per_layer_input: usize,
    /// Gemma 4: logits become `cap · tanh(logits / cap)`.
    pub final_softcap: Option<f32>,
}

impl ModelConfig {
    pub fn from_header(header: &GgufHeader) -> Result<Self> {
        let arch_name = header
            .architecture()
            .ok_or_else(|| anyhow!("no general.architecture in the metadata"))?
            .to_string();
        let arch = Arch::from_name(&arch_name).ok_or_else(|| {
            anyhow!(
                "architecture {arch_name:?} is not supported (taper runs: {})",
                Arch::SUPPORTED.join(", ")
            )
        })?;
        let meta = Meta {
            header,
            arch_name: &arch_name,
        };
        let sizes = meta.sizes()?;
        let vocab_size = meta.vocab_size(sizes.n_embd)?;
        let context_length = meta.usize_or("context_length", 4096);
        let recipe = arch.recipe();
        let rms_eps = meta.f64_or("attention.layer_norm_rms_epsilon", recipe.rms_eps) as f32;
        let rope = meta.rope(arch, sizes.head_dim)?;
        let (sliding_window, swa_layers, rope_swa) = if recipe.sliding_window {
            let (window, layers) = meta.sliding_layers(sizes.n_layer)?;
            let rope_swa = RopeConfig {
                base: meta.f64_or("rope.freq_base_swa", 10_000.0) as f32,
                freq_scale: 1.0,
                n_rot: meta.rotary_dims("rope.dimension_count_swa", sizes.head_dim_swa)?,
                ..rope.clone()
            };
            (Some(window), layers, rope_swa)
        } else {
            (None, vec![false; sizes.n_layer], rope.clone())
        };
        let default_attn_scale = match recipe.score_scale {
            ScoreScale::One => 1.0,
            ScoreScale::InverseSqrtHeadDim => 1.0 / (sizes.head_dim as f32).sqrt(),
        };
        let shared_kv_layers = meta.usize_or("attention.shared_kv_layers", 0);
        if shared_kv_layers >= sizes.n_layer {
            bail!(
                "{shared_kv_layers} KV-shared layers leave none of {} to own a cache",
                sizes.n_layer
            );
        }
        Ok(Self {
            arch,
            arch_name: arch_name.clone(),
            n_layer: sizes.n_layer,
            n_embd: sizes.n_embd,
            n_head: sizes.n_head,
            n_head_kv: sizes.n_head_kv,
            head_dim: sizes.head_dim,
            head_dim_swa: sizes.head_dim_swa,
            n_ff: sizes.n_ff,
            vocab_size,
            context_length,
            rms_eps,
            rope,
            rope_swa,
            rope_original_context: meta
                .usize_or("rope.scaling.original_context_length", context_length),
            sliding_window,
            swa_layers,
            embed_scale: recipe
                .embed_sqrt_width
                .then(|| (sizes.n_embd as f32).sqrt()),
            attn_scale: meta.f64_or("attention.scale", default_attn_scale as f64) as f32,
            shared_kv_layers,
            per_layer_input: meta.usize_or("embedding_length_per_layer_input", 0),
            final_softcap: header
                .get_f64(&meta.key("final_logit_softcapping"))
                .map(|v| v as f32)
                .filter(|&cap| cap > 0.0),
        })
    }

    /// Per layer, the head size of its own KV cache, or `None` when it reads another layer's.
    pub fn cache_head_dims(&self) -> Result<Vec<Option<usize>>> {
        (0..self.n_layer)
            .map(|il| Ok((self.kv_source(il)? == il).then(|| self.layer_head_dim(il))))
            .collect()
    }

    /// Head size of layer `il`.
    pub fn layer_head_dim(&self, il: usize) -> usize {
        if self.swa_layers[il] {
            self.head_dim_swa
        } else {
            self.head_dim
        }
    }

    /// The layer whose KV cache layer `il` reads: itself, or for a Gemma 4 KV-shared layer the
    /// last layer before the shared ones that is of the same kind (sliding or global).
    pub fn kv_source(&self, il: usize) -> Result<usize> {
        let first_shared = self.n_layer - self.shared_kv_layers;
        if il < first_shared {
            return Ok(il);
        }
        (0..first_shared)
            .rev()
            .find(|&src| self.swa_layers[src] == self.swa_layers[il])
            .ok_or_else(|| {
                anyhow!("layer {il} shares a KV cache, but no earlier layer is of its kind")
            })
    }
}

/// A per-layer size: one number for every layer, or an array of one per layer.
fn per_layer_sizes(header: &GgufHeader, key: &str, n_layer: usize) -> Result<Vec<usize>> {
    if let Some(v) = header.get_u64(key) {
        return Ok(vec![v as usize; n_layer]);
    }
    let values = header
        .get_array(key)
        .ok_or_else(|| anyhow!("metadata key {key} is missing"))?;
    let sizes: Option<Vec<usize>> = values
        .iter()
        .map(|v| v.as_u64().map(|v| v as usize))
        .collect();
    match sizes {
        Some(sizes) if sizes.len() == n_layer && sizes.iter().all(|&s| s > 0) => Ok(sizes),
        _ => bail!("{key} is not one positive size per layer"),
    }
}

/// The sizes every architecture has.
struct Sizes {
    n_layer: usize,
    n_embd: usize,
    n_head: usize,
    n_head_kv: usize,
    head_dim: usize,
    head_dim_swa: usize,
    n_ff: Vec<usize>,
}

/// The metadata keys of one architecture (`{arch}.{suffix}`).
struct Meta<'h> {
    header: &'h GgufHeader,
    arch_name: &'h str,
}

impl Meta<'_> {
    fn key(&self, suffix: &str) -> String {
        format!("{}.{suffix}", self.arch_name)
    }

    fn usize_of(&self, suffix: &str) -> Option<usize> {
        self.header.get_u64(&self.key(suffix)).map(|v| v as usize)
    }

    fn usize_or(&self, suffix: &str, default: usize) -> usize {
        self.usize_of(suffix).unwrap_or(default)
    }

    fn f64_or(&self, suffix: &str, default: f64) -> f64 {
        self.header.get_f64(&self.key(suffix)).unwrap_or(default)
    }

    fn required(&self, suffix: &str) -> Result<usize> {
        self.usize_of(suffix)
            .ok_or_else(|| anyhow!("metadata key {} is missing", self.key(suffix)))
    }

    fn sizes(&self) -> Result<Sizes> {
        let n_layer = self.required("block_count")?;
        let n_embd = self.required("embedding_length")?;
        let n_head = self.required("attention.head_count")?;
        let n_head_kv = self.usize_or("attention.head_count_kv", n_head);
        let n_ff = per_layer_sizes(self.header, &self.key("feed_forward_length"), n_layer)?;
        if n_layer == 0 || n_embd == 0 || n_head == 0 || n_head_kv == 0 || n_head % n_head_kv != 0 {
            bail!("inconsistent sizes: {n_layer} layers, {n_embd} wide, {n_head} heads, {n_head_kv} KV heads");
        }
        let head_dim = self.usize_or("attention.key_length", n_embd / n_head);
        let head_dim_swa = self.usize_or("attention.key_length_swa", head_dim);
        for (what, suffix, k) in [
            ("value", "attention.value_length", head_dim),
            ("sliding value", "attention.value_length_swa", head_dim_swa),
        ] {
            if let Some(v) = self.usize_of(suffix) {
                if v != k {
                    bail!("{what} heads of {v} differ from key heads of {k}: not supported");
                }
            }
        }
        if head_dim == 0 || head_dim_swa == 0 {
            bail!("a head size of 0 in the metadata");
        }
        Ok(Sizes {
            n_layer,
            n_embd,
            n_head,
            n_head_kv,
            head_dim,
            head_dim_swa,
            n_ff,
        })
    }

    /// The vocabulary size, checked against the token embedding's shape.
    fn vocab_size(&self, n_embd: usize) -> Result<usize> {
        let token_embd = self
            .header
            .tensor("token_embd.weight")
            .ok_or_else(|| anyhow!("tensor token_embd.weight is missing"))?;
        let vocab_size = self
            .usize_of("vocab_size")
            .or_else(|| token_embd.dims.get(1).copied())
            .unwrap_or(0);
        if token_embd.dims.first() != Some(&n_embd) || token_embd.dims.get(1) != Some(&vocab_size) {
            bail!(
                "token_embd.weight has shape {:?}, expected [{n_embd}, {vocab_size}]",
                token_embd.dims
            );
        }
        Ok(vocab_size)
    }

    /// How many dimensions of a head of `head_dim` rotate: the file's `suffix` key, else all.
    /// A count above the head size, or an odd one, cannot be what the model was trained with.
    fn rotary_dims(&self, suffix: &str, head_dim: usize) -> Result<usize> {
        let n_rot = self.usize_or(suffix, head_dim);
        if n_rot > head_dim || !n_rot.is_multiple_of(2) {
            bail!(
                "{} is {n_rot}, which does not fit heads of {head_dim} dimensions \
                 (it must be even and at most the head size)",
                self.key(suffix)
            );
        }
        Ok(n_rot)
    }

    /// The rotary embedding of global layers.
    fn rope(&self, arch: Arch, head_dim: usize) -> Result<RopeConfig> {
        let freq_scale = match self.header.get_str(&self.key("rope.scaling.type")) {
            Some("linear") => 1.0 / self.f64_or("rope.scaling.factor", 1.0),
            _ => 1.0,
        } as f32;
        Ok(RopeConfig {
            base: self.f64_or("rope.freq_base", 10_000.0) as f32,
            freq_scale,
            n_rot: self.rotary_dims("rope.dimension_count", head_dim)?,
            neox: arch.recipe().rope == RopeStyle::NeoX,
            attn_factor: self.f64_or("rope.scaling.attn_factor", 1.0) as f32,
        })
    }

    /// Gemma's sliding window and which layers use it.
    fn sliding_layers(&self, n_layer: usize) -> Result<(usize, Vec<bool>)> {
        let window = self.usize_or("attention.sliding_window", 4096);
        let pattern_key = self.key("attention.sliding_window_pattern");
        let layers = match self.header.get_array(&pattern_key) {
            Some(pattern) => {
                let flags: Option<Vec<bool>> = pattern.iter().map(|v| v.as_bool()).collect();
                match flags {
                    Some(flags) if flags.len() == n_layer => flags,
                    _ => bail!("{pattern_key} is not one true/false per layer"),
                }
            }
            // Gemma 3 interleaves five sliding layers with one global layer.
            None => (0..n_layer).map(|il| (il + 1) % 6 != 0).collect(),
        };
        Ok((window, layers))
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
