//! The shape of a decoder, read from GGUF metadata: which architecture, how big, which options.

use crate::engine::gguf::GgufHeader;
use anyhow::{anyhow, bail, Result};

/// The architectures the decoder implements (`general.architecture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Llama,
    Qwen2,
    Qwen3,
    Phi3,
    Gemma3,
}

impl Arch {
    pub const SUPPORTED: &'static [&'static str] = &["llama", "qwen2", "qwen3", "phi3", "gemma3"];

    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "llama" => Arch::Llama,
            "qwen2" => Arch::Qwen2,
            "qwen3" => Arch::Qwen3,
            "phi3" => Arch::Phi3,
            "gemma3" => Arch::Gemma3,
            _ => return None,
        })
    }

    /// Gemma's feed-forward uses tanh-GELU; everyone else SiLU.
    pub fn uses_gelu(self) -> bool {
        matches!(self, Arch::Gemma3)
    }
}

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
    pub head_dim: usize,
    pub n_ff: usize,
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
        let key = |suffix: &str| format!("{arch_name}.{suffix}");
        let required = |suffix: &str| -> Result<usize> {
            header
                .get_u64(&key(suffix))
                .map(|v| v as usize)
                .ok_or_else(|| anyhow!("metadata key {} is missing", key(suffix)))
        };
        let n_layer = required("block_count")?;
        let n_embd = required("embedding_length")?;
        let n_head = required("attention.head_count")?;
        let n_head_kv = header
            .get_u64(&key("attention.head_count_kv"))
            .map(|v| v as usize)
            .unwrap_or(n_head);
        let n_ff = required("feed_forward_length")?;
        if n_layer == 0 || n_embd == 0 || n_head == 0 || n_head_kv == 0 || n_head % n_head_kv != 0 {
            bail!("inconsistent sizes: {n_layer} layers, {n_embd} wide, {n_head} heads, {n_head_kv} KV heads");
        }
        let head_dim = header
            .get_u64(&key("attention.key_length"))
            .map(|v| v as usize)
            .unwrap_or(n_embd / n_head);
        let token_embd = header
            .tensor("token_embd.weight")
            .ok_or_else(|| anyhow!("tensor token_embd.weight is missing"))?;
        let vocab_size = header
            .get_u64(&key("vocab_size"))
            .map(|v| v as usize)
            .or_else(|| token_embd.dims.get(1).copied())
            .unwrap_or(0);
        if token_embd.dims.first() != Some(&n_embd) || token_embd.dims.get(1) != Some(&vocab_size) {
            bail!(
                "token_embd.weight has shape {:?}, expected [{n_embd}, {vocab_size}]",
                token_embd.dims
            );
        }
        let context_length = header
            .get_u64(&key("context_length"))
            .map(|v| v as usize)
            .unwrap_or(4096);
        let default_eps = if matches!(arch, Arch::Llama | Arch::Phi3) {
            1e-5
        } else {
            1e-6
        };
        let rms_eps = header
            .get_f64(&key("attention.layer_norm_rms_epsilon"))
            .unwrap_or(default_eps) as f32;

        let n_rot = header
            .get_u64(&key("rope.dimension_count"))
            .map(|v| v as usize)
            .unwrap_or(head_dim)
            .min(head_dim);
        let freq_scale = match header.get_str(&key("rope.scaling.type")) {
            Some("linear") => 1.0 / header.get_f64(&key("rope.scaling.factor")).unwrap_or(1.0),
            _ => 1.0,
        } as f32;
        let rope = RopeConfig {
            base: header.get_f64(&key("rope.freq_base")).unwrap_or(10_000.0) as f32,
            freq_scale,
            n_rot,
            neox: arch != Arch::Llama,
            attn_factor: header
                .get_f64(&key("rope.scaling.attn_factor"))
                .unwrap_or(1.0) as f32,
        };
        let (sliding_window, swa_layers, rope_swa) = if arch == Arch::Gemma3 {
            let window = header
                .get_u64(&key("attention.sliding_window"))
                .map(|v| v as usize)
                .unwrap_or(4096);
            // Gemma 3 interleaves five sliding layers with one global layer.
            let layers = (0..n_layer).map(|il| (il + 1) % 6 != 0).collect();
            let rope_swa = RopeConfig {
                base: header
                    .get_f64(&key("rope.freq_base_swa"))
                    .unwrap_or(10_000.0) as f32,
                freq_scale: 1.0,
                ..rope.clone()
            };
            (Some(window), layers, rope_swa)
        } else {
            // Phi-3's converter writes a sliding window that the model does not use.
            (None, vec![false; n_layer], rope.clone())
        };
        let embed_scale = (arch == Arch::Gemma3).then(|| (n_embd as f32).sqrt());
        let attn_scale = header
            .get_f64(&key("attention.scale"))
            .map(|s| s as f32)
            .unwrap_or(1.0 / (head_dim as f32).sqrt());
        let rope_original_context = header
            .get_u64(&key("rope.scaling.original_context_length"))
            .map(|v| v as usize)
            .unwrap_or(context_length);
        Ok(Self {
            arch,
            arch_name: arch_name.clone(),
            n_layer,
            n_embd,
            n_head,
            n_head_kv,
            head_dim,
            n_ff,
            vocab_size,
            context_length,
            rms_eps,
            rope,
            rope_swa,
            rope_original_context,
            sliding_window,
            swa_layers,
            embed_scale,
            attn_scale,
        })
    }
}
