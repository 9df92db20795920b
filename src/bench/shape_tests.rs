use super::*;
use crate::catalog;

#[test]
fn every_supported_catalogue_entry_has_a_plan() {
    for entry in catalog::entries().iter().filter(|e| e.supported) {
        let p = plan(ShapeSource::from_entry(entry).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e:#}", entry.name));
        assert_eq!(p.fills.len(), p.writer.tensors().len());
    }
}

#[test]
fn planned_sizes_are_close_to_the_real_files() {
    // The catalogue's sizes are the real files': tensor data plus a few MB of vocabulary.
    // Gemma 4's real quant mix is not known (see its `confirmed` note in the catalogue).
    for entry in catalog::entries()
        .iter()
        .filter(|e| e.supported && e.architecture != "gemma4")
    {
        let p = plan(ShapeSource::from_entry(entry).unwrap()).unwrap();
        let data = p.writer.data_size() as f64;
        let real = entry.size_bytes as f64;
        assert!(
            data < real && data > real - 10e6,
            "{}: {data} vs {real}",
            entry.name
        );
    }
}

#[test]
fn the_quant_mix_follows_the_layer() {
    let e = catalog::find("qwen3-4b").unwrap();
    let p = plan(ShapeSource::from_entry(e).unwrap()).unwrap();
    let dtype = |n: &str| {
        p.writer
            .tensors()
            .iter()
            .find(|t| t.name == n)
            .unwrap()
            .dtype
    };
    assert_eq!(dtype("blk.0.attn_v.weight"), GgmlDType::Q6K);
    assert_eq!(dtype("blk.4.attn_v.weight"), GgmlDType::Q4K);
    assert_eq!(dtype("blk.6.ffn_down.weight"), GgmlDType::Q6K);
    assert_eq!(dtype("token_embd.weight"), GgmlDType::Q6K);
    assert!(p.writer.tensors().iter().all(|t| t.name != "output.weight"));
}

#[test]
fn phi4_mini_gets_longrope_and_fused_tensors() {
    let e = catalog::find("phi4-mini").unwrap();
    let p = plan(ShapeSource::from_entry(e).unwrap()).unwrap();
    let names: Vec<&str> = p.writer.tensors().iter().map(|t| t.name.as_str()).collect();
    for n in [
        "rope_factors_long.weight",
        "rope_factors_short.weight",
        "blk.0.attn_qkv.weight",
    ] {
        assert!(names.contains(&n), "{n}");
    }
    assert!(!names.contains(&"blk.0.ffn_gate.weight"));
    let meta = |k: &str| {
        p.writer
            .metadata()
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        meta("phi3.rope.scaling.original_context_length"),
        Some(MetaValue::U32(4096))
    );
    assert_eq!(meta("phi3.context_length"), Some(MetaValue::U32(131072)));
}

#[test]
fn gemma4_e4b_has_shared_kv_layers_and_per_layer_inputs() {
    let e = catalog::find("gemma4-e4b").unwrap();
    let p = plan(ShapeSource::from_entry(e).unwrap()).unwrap();
    let tensor = |n: &str| p.writer.tensors().iter().find(|t| t.name == n);
    // Layers 24..41 read the KV cache of layers 22 (sliding) and 23 (global).
    assert!(tensor("blk.23.attn_k.weight").is_some());
    assert!(tensor("blk.24.attn_k.weight").is_none());
    assert!(tensor("blk.41.attn_v.weight").is_none());
    // Global layers have 512-wide heads, sliding ones 256.
    assert_eq!(tensor("blk.5.attn_q.weight").unwrap().dims, [2560, 8 * 512]);
    assert_eq!(tensor("blk.4.attn_q.weight").unwrap().dims, [2560, 8 * 256]);
    assert_eq!(
        tensor("per_layer_token_embd.weight").unwrap().dims,
        [42 * 256, 262144]
    );
    assert!(tensor("output.weight").is_none());
}
