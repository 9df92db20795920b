//! The architectures taper runs, one row each of [`RECIPES`]: what the one decoder does
//! differently for each, looked up instead of tested for by name.
//!
//! What a row decides is what the architecture alone decides. Parts that some files of an
//! architecture have and others lack are read wherever the file has them, whatever the row
//! says, so one architecture's variants all load:
//!
//! - tensors: a fused `attn_qkv` projection, Q/K/V biases (`attn_q.bias`, ...), per-head Q and
//!   K norms (`attn_q_norm`, `attn_k_norm`), the sandwich norms after attention and after the
//!   feed-forward (`post_attention_norm`, `post_ffw_norm`), a layer output scale, frequency
//!   factors (`rope_freqs`, `rope_factors_long`/`_short`), a separate output head;
//! - metadata: the final logit soft-cap, per-layer inputs, KV-shared layers, the attention
//!   scale and the RMS norm's epsilon (over the row's defaults).
//!
//! Adding an architecture is a variant of [`Arch`] and a row here, plus whatever new part its
//! layers have in [`crate::engine::model::layer`].

/// The architectures the decoder implements (`general.architecture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Llama,
    Qwen2,
    Qwen3,
    Phi3,
    Gemma3,
    Gemma4,
}

/// How positions rotate pairs of a head's dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Llama's: dimension 2i with 2i+1.
    Interleaved,
    /// NeoX's: dimension i with i + n_rot/2.
    NeoX,
}

/// The attention scores' scale when the metadata gives none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreScale {
    /// 1/√head_dim.
    InverseSqrtHeadDim,
    /// None (Gemma 4 normalises Q and K per head instead).
    One,
}

/// The feed-forward's gating activation: `act(gate) · up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    Silu,
    /// tanh-approximated GELU.
    Gelu,
}

/// How the feed-forward's gate and up projections are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FfnStorage {
    /// `ffn_gate` and `ffn_up`.
    Separate,
    /// One `ffn_up` of twice the width: the gate in its first half, up in its second (Phi-3).
    FusedGateUp,
}

/// One architecture's row.
#[derive(Debug)]
pub struct Recipe {
    pub arch: Arch,
    /// `general.architecture`.
    pub name: &'static str,
    /// The RMS norm's epsilon when the metadata gives none.
    pub rms_eps: f64,
    pub rope: RopeStyle,
    /// Sliding-window layers interleaved with global ones (window, pattern and their own
    /// rotary base from the metadata); without it every layer is global (Phi-3's converter
    /// writes a window the model does not use).
    pub sliding_window: bool,
    /// Token embeddings multiplied by √n_embd.
    pub embed_sqrt_width: bool,
    pub score_scale: ScoreScale,
    /// Each head of V normalised, without a weight (Gemma 4).
    pub value_norm: bool,
    pub ffn: FfnStorage,
    pub activation: Activation,
}

/// Every architecture taper runs.
pub const RECIPES: [Recipe; 6] = [
    Recipe {
        arch: Arch::Llama,
        name: "llama",
        rms_eps: 1e-5,
        rope: RopeStyle::Interleaved,
        sliding_window: false,
        embed_sqrt_width: false,
        score_scale: ScoreScale::InverseSqrtHeadDim,
        value_norm: false,
        ffn: FfnStorage::Separate,
        activation: Activation::Silu,
    },
    Recipe {
        arch: Arch::Qwen2,
        name: "qwen2",
        rms_eps: 1e-6,
        rope: RopeStyle::NeoX,
        sliding_window: false,
        embed_sqrt_width: false,
        score_scale: ScoreScale::InverseSqrtHeadDim,
        value_norm: false,
        ffn: FfnStorage::Separate,
        activation: Activation::Silu,
    },
    Recipe {
        arch: Arch::Qwen3,
        name: "qwen3",
        rms_eps: 1e-6,
        rope: RopeStyle::NeoX,
        sliding_window: false,
        embed_sqrt_width: false,
        score_scale: ScoreScale::InverseSqrtHeadDim,
        value_norm: false,
        ffn: FfnStorage::Separate,
        activation: Activation::Silu,
    },
    Recipe {
        arch: Arch::Phi3,
        name: "phi3",
        rms_eps: 1e-5,
        rope: RopeStyle::NeoX,
        sliding_window: false,
        embed_sqrt_width: false,
        score_scale: ScoreScale::InverseSqrtHeadDim,
        value_norm: false,
        ffn: FfnStorage::FusedGateUp,
        activation: Activation::Silu,
    },
    Recipe {
        arch: Arch::Gemma3,
        name: "gemma3",
        rms_eps: 1e-6,
        rope: RopeStyle::NeoX,
        sliding_window: true,
        embed_sqrt_width: true,
        score_scale: ScoreScale::InverseSqrtHeadDim,
        value_norm: false,
        ffn: FfnStorage::Separate,
        activation: Activation::Gelu,
    },
    Recipe {
        arch: Arch::Gemma4,
        name: "gemma4",
        rms_eps: 1e-6,
        rope: RopeStyle::NeoX,
        sliding_window: true,
        embed_sqrt_width: true,
        score_scale: ScoreScale::One,
        value_norm: true,
        ffn: FfnStorage::Separate,
        activation: Activation::Gelu,
    },
];

/// The names of [`RECIPES`], in order.
const NAMES: [&str; RECIPES.len()] = {
    let mut names = [""; RECIPES.len()];
    let mut i = 0;
    while i < RECIPES.len() {
        names[i] = RECIPES[i].name;
        i += 1;
    }
    names
};

impl Arch {
    /// Every `general.architecture` taper runs.
    pub const SUPPORTED: &'static [&'static str] = &NAMES;

    pub fn from_name(name: &str) -> Option<Self> {
        RECIPES.iter().find(|r| r.name == name).map(|r| r.arch)
    }

    /// This architecture's row of [`RECIPES`].
    pub fn recipe(self) -> &'static Recipe {
        RECIPES
            .iter()
            .find(|r| r.arch == self)
            .expect("every architecture has a row in RECIPES")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_architecture_has_one_row_and_its_name_finds_it() {
        for recipe in &RECIPES {
            assert_eq!(Arch::from_name(recipe.name), Some(recipe.arch));
            assert_eq!(recipe.arch.recipe().name, recipe.name);
        }
        assert_eq!(
            Arch::SUPPORTED,
            ["llama", "qwen2", "qwen3", "phi3", "gemma3", "gemma4"]
        );
        assert_eq!(Arch::from_name("gemma2"), None);
    }
}
