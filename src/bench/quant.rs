//! The per-tensor quantization mix of a catalogue shape, as llama.cpp's Q4_K_M rules give it.

use crate::catalog::ModelShape;
use anyhow::{anyhow, Result};
use candle_core::quantized::GgmlDType;

/// llama.cpp's `use_more_bits` (src/llama-quant.cpp): the layers Q4_K_M gives more bits.
pub fn use_more_bits(layer: usize, n_layers: usize) -> bool {
    layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2
}

/// A ggml type name as the catalogue writes it (`Q4_K`, `Q5_0`, `F16` ...).
pub fn parse_ggml_type(name: &str) -> Option<GgmlDType> {
    Some(match name.trim().to_ascii_uppercase().as_str() {
        "F32" => GgmlDType::F32,
        "F16" => GgmlDType::F16,
        "BF16" => GgmlDType::BF16,
        "Q4_0" => GgmlDType::Q4_0,
        "Q4_1" => GgmlDType::Q4_1,
        "Q5_0" => GgmlDType::Q5_0,
        "Q5_1" => GgmlDType::Q5_1,
        "Q8_0" => GgmlDType::Q8_0,
        "Q2_K" => GgmlDType::Q2K,
        "Q3_K" => GgmlDType::Q3K,
        "Q4_K" => GgmlDType::Q4K,
        "Q5_K" => GgmlDType::Q5K,
        "Q6_K" => GgmlDType::Q6K,
        _ => return None,
    })
}

/// The type of a tensor role in `layer` (None for whole-model tensors): "A", or "A/B" with B
/// in the use_more_bits layers. `Ok(None)` for "tied" (there is no such tensor).
pub(super) fn role_type(
    shape: &ModelShape,
    role: &str,
    layer: Option<usize>,
) -> Result<Option<GgmlDType>> {
    let spec = shape
        .quant
        .get(role)
        .ok_or_else(|| anyhow!("the quant mix has no type for {role}"))?;
    if spec == "tied" {
        return Ok(None);
    }
    let name = match spec.split_once('/') {
        Some((normal, more)) => match layer {
            Some(il) if use_more_bits(il, shape.layers) => more,
            _ => normal,
        },
        None => spec.as_str(),
    };
    parse_ggml_type(name)
        .map(Some)
        .ok_or_else(|| anyhow!("{role}: {spec:?} is not a ggml type taper can write"))
}

/// llama.cpp's `general.file_type` (enum llama_ftype) for the common mixes.
pub(super) fn file_type(quantization: &str) -> Option<u32> {
    Some(match quantization.to_ascii_uppercase().as_str() {
        "F32" => 0,
        "F16" => 1,
        "Q4_0" => 2,
        "Q4_1" => 3,
        "Q8_0" => 7,
        "Q5_0" => 8,
        "Q5_1" => 9,
        "Q4_K_S" => 14,
        "Q4_K_M" => 15,
        "Q5_K_S" => 16,
        "Q5_K_M" => 17,
        "Q6_K" => 18,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_bits_layers_are_llama_cpps() {
        let more = |n: usize| -> Vec<usize> { (0..n).filter(|&i| use_more_bits(i, n)).collect() };
        assert_eq!(
            more(30),
            [0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 26, 27, 28, 29]
        );
        assert_eq!(
            more(36),
            [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 31, 32, 33, 34, 35]
        );
        assert_eq!(more(18), [0, 1, 4, 7, 10, 13, 15, 16, 17]);
    }

    #[test]
    fn catalogue_type_names_parse() {
        assert_eq!(parse_ggml_type("Q4_K"), Some(GgmlDType::Q4K));
        assert_eq!(parse_ggml_type("q8_0"), Some(GgmlDType::Q8_0));
        assert_eq!(parse_ggml_type("unknown"), None);
        assert_eq!(file_type("Q4_K_M"), Some(15));
    }
}
