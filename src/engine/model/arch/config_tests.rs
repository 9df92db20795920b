use super::*;
use crate::engine::gguf::{MetaValue, TensorInfo};
use candle_core::quantized::GgmlDType;

/// A llama header of 2 layers, 64 wide, 4 heads of 16, with `extra` metadata.
fn llama(extra: Vec<(&str, MetaValue)>) -> GgufHeader {
    let mut metadata: std::collections::BTreeMap<String, MetaValue> = [
        ("general.architecture", MetaValue::String("llama".into())),
        ("llama.block_count", MetaValue::U32(2)),
        ("llama.embedding_length", MetaValue::U32(64)),
        ("llama.attention.head_count", MetaValue::U32(4)),
        ("llama.feed_forward_length", MetaValue::U32(128)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    metadata.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
    GgufHeader {
        path: "test.gguf".into(),
        version: 3,
        file_size: 0,
        metadata,
        tensors: vec![TensorInfo {
            name: "token_embd.weight".into(),
            dtype: GgmlDType::F32,
            dims: vec![64, 100],
            offset: 0,
            size_bytes: 64 * 100 * 4,
        }],
    }
}

#[test]
fn rotary_dimensions_default_to_the_head_and_may_be_fewer() {
    let config = ModelConfig::from_header(&llama(vec![])).unwrap();
    assert_eq!((config.head_dim, config.rope.n_rot), (16, 16));
    let partial = llama(vec![("llama.rope.dimension_count", MetaValue::U32(8))]);
    assert_eq!(ModelConfig::from_header(&partial).unwrap().rope.n_rot, 8);
}

#[test]
fn rotary_dimensions_that_do_not_fit_the_head_are_refused() {
    for bad in [32, 7] {
        let header = llama(vec![("llama.rope.dimension_count", MetaValue::U32(bad))]);
        let err = ModelConfig::from_header(&header).unwrap_err().to_string();
        assert!(
            err.contains(&format!("llama.rope.dimension_count is {bad}"))
                && err.contains("heads of 16"),
            "{err}"
        );
    }
}
