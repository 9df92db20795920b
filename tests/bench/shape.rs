//! Shape-only GGUF files: written from hand-made small shapes of every architecture, read
//! back by our own header reader and loaded and run by the engine's decoder.

use taper::bench::shape::{plan, write_shape_file, ShapeSource};
use taper::catalog::ModelShape;
use taper::engine::gguf::{GgufHeader, MetaValue};
use taper::engine::model;

/// A small shape in the catalogue's own format; `extra` is appended to [model.shape].
fn tiny_shape(extra: &str, quant: &str) -> ModelShape {
    let text = format!(
        "layers = 3\nhidden = 256\nheads = 4\nkv_heads = 2\nhead_dim = 64\nffn = 512\n\
         vocab = 320\ncontext = 2048\nrope_theta = 10000.0\nrope_dim = 64\n\
         tied_embeddings = true\nrms_eps = 1e-5\n{extra}\n[quant]\n{quant}\n"
    );
    toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

const SEPARATE: &str = "token_embd = \"Q8_0\"\noutput = \"tied\"\nattn_q = \"Q4_K\"\n\
    attn_k = \"Q4_K\"\nattn_v = \"Q4_K/Q6_K\"\nattn_output = \"Q5_0\"\nffn_gate = \"Q4_K\"\n\
    ffn_up = \"Q4_K\"\nffn_down = \"Q4_K/Q6_K\"\n";

const FUSED: &str = "token_embd = \"Q6_K\"\noutput = \"Q8_0\"\nattn_qkv = \"Q5_K\"\n\
    attn_output = \"Q4_K\"\nffn_up = \"Q4_K\"\nffn_down = \"Q4_K/Q6_K\"\n";

fn source<'a>(name: &'a str, arch: &'a str, shape: &'a ModelShape) -> ShapeSource<'a> {
    ShapeSource {
        name,
        architecture: arch,
        quantization: "Q4_K_M",
        shape,
    }
}

/// Writes the shape, checks the header, loads the model and runs a few tokens.
fn write_load_and_run(name: &str, arch: &str, shape: &ModelShape) -> GgufHeader {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.gguf"));
    let written = write_shape_file(source(name, arch, shape), &path).unwrap();
    let header = GgufHeader::read(&path).unwrap();
    assert_eq!(header.file_size, written);
    assert_eq!(header.version, 3);
    assert_eq!(header.architecture(), Some(arch));
    assert_eq!(
        header.get_str("general.name"),
        Some(format!("shape-only {name}").as_str())
    );
    assert_eq!(header.get_str("tokenizer.ggml.model"), Some("no_vocab"));
    assert_eq!(header.get("general.alignment"), Some(&MetaValue::U32(32)));
    assert_eq!(
        header.get(&format!("{arch}.vocab_size")),
        Some(&MetaValue::U32(320))
    );
    for t in &header.tensors {
        assert_eq!(t.offset % 32, 0, "{} is aligned", t.name);
    }
    // The planned directory is what the file holds.
    let planned = plan(source(name, arch, shape)).unwrap();
    let names: Vec<&str> = header.tensors.iter().map(|t| t.name.as_str()).collect();
    let planned_names: Vec<&str> = planned
        .writer
        .tensors()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, planned_names);

    let mut m = model::load(&header, 64).unwrap();
    assert_eq!(m.config().vocab_size, 320);
    let values = m.forward(&[1, 17, 42, 99, 3], false).unwrap();
    assert_eq!(values.len(), 320);
    assert!(
        values.iter().all(|v| v.is_finite()),
        "{name}: non-finite logits"
    );
    let next = m.forward(&[7], false).unwrap();
    assert!(next.iter().all(|v| v.is_finite()));
    assert_eq!(m.cached_len(), 6);
    header
}

fn dtype_of(h: &GgufHeader, name: &str) -> candle_core::quantized::GgmlDType {
    h.tensor(name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .dtype
}

#[test]
fn a_llama_shape_loads_and_runs_with_its_quant_mix() {
    use candle_core::quantized::GgmlDType::*;
    let shape = tiny_shape("", SEPARATE);
    let h = write_load_and_run("tiny-llama", "llama", &shape);
    assert!(h.tensor("output.weight").is_none(), "tied");
    assert_eq!(dtype_of(&h, "token_embd.weight"), Q8_0);
    // use_more_bits(i, 3) is true for layer 2 only (3/8 = 0, 7*3/8 = 2), as in llama.cpp.
    assert_eq!(dtype_of(&h, "blk.0.attn_v.weight"), Q4K);
    assert_eq!(dtype_of(&h, "blk.2.attn_v.weight"), Q6K);
    assert_eq!(dtype_of(&h, "blk.2.ffn_down.weight"), Q6K);
    assert_eq!(dtype_of(&h, "blk.1.attn_output.weight"), Q5_0);
    assert_eq!(dtype_of(&h, "blk.1.attn_norm.weight"), F32);
    assert!(
        h.get("llama.attention.key_length").is_none(),
        "head_dim = hidden / heads"
    );
}

#[test]
fn a_llama3_shape_carries_rope_frequency_factors() {
    let shape = tiny_shape(
        "rope_scaling = \"llama3\"\nrope_scaling_factor = 32.0\nrope_original_context = 8192",
        SEPARATE,
    );
    let h = write_load_and_run("tiny-llama3", "llama", &shape);
    assert_eq!(h.tensor("rope_freqs.weight").unwrap().dims, [32]);
}

#[test]
fn a_qwen2_shape_has_biases_and_an_untied_output() {
    let mut shape = tiny_shape("qkv_bias = true", SEPARATE);
    shape.tied_embeddings = false;
    shape.quant.insert("output".into(), "Q6_K".into());
    let h = write_load_and_run("tiny-qwen2", "qwen2", &shape);
    assert_eq!(h.tensor("blk.0.attn_k.bias").unwrap().dims, [128]);
    assert!(h.tensor("output.weight").is_some());
}

#[test]
fn a_qwen3_shape_has_qk_norms_and_a_wider_head() {
    let mut shape = tiny_shape("qk_norm = true", SEPARATE);
    shape.head_dim = 128;
    shape.rope_dim = 128;
    let h = write_load_and_run("tiny-qwen3", "qwen3", &shape);
    assert_eq!(
        h.get("qwen3.attention.key_length"),
        Some(&MetaValue::U32(128))
    );
    assert_eq!(h.tensor("blk.1.attn_q_norm.weight").unwrap().dims, [128]);
    assert_eq!(h.tensor("blk.0.attn_q.weight").unwrap().dims, [256, 512]);
}

#[test]
fn a_phi4_mini_like_shape_has_fused_tensors_and_longrope() {
    let mut shape = tiny_shape(
        "fused_qkv = true\nfused_gate_up = true\nrope_scaling = \"longrope\"\n\
         rope_original_context = 256",
        FUSED,
    );
    shape.rope_dim = 48;
    shape.context = 8192;
    let h = write_load_and_run("tiny-phi4", "phi3", &shape);
    assert_eq!(h.tensor("blk.0.attn_qkv.weight").unwrap().dims, [256, 512]);
    assert_eq!(h.tensor("blk.0.ffn_up.weight").unwrap().dims, [256, 1024]);
    assert!(h.tensor("blk.0.ffn_gate.weight").is_none());
    assert_eq!(h.tensor("rope_factors_long.weight").unwrap().dims, [24]);
    assert_eq!(
        h.get("phi3.rope.scaling.original_context_length"),
        Some(&MetaValue::U32(256))
    );
    let attn_factor = h.get_f64("phi3.rope.scaling.attn_factor").unwrap();
    assert!(attn_factor > 1.0 && attn_factor < 2.0, "{attn_factor}");
}

#[test]
fn a_gemma3_shape_has_sandwich_norms_and_a_sliding_window() {
    let mut shape = tiny_shape(
        "qk_norm = true\nsliding_window = 8\nrope_local_theta = 10000.0",
        SEPARATE,
    );
    shape.layers = 6;
    shape.heads = 2;
    shape.kv_heads = 1;
    shape.head_dim = 256;
    shape.rope_dim = 256;
    let h = write_load_and_run("tiny-gemma3", "gemma3", &shape);
    assert_eq!(
        h.get("gemma3.attention.sliding_window"),
        Some(&MetaValue::U32(8))
    );
    assert_eq!(
        h.get("gemma3.attention.key_length"),
        Some(&MetaValue::U32(256))
    );
    assert!(h.tensor("blk.5.post_ffw_norm.weight").is_some());
    assert!(h.tensor("blk.5.post_attention_norm.weight").is_some());
}

#[test]
fn a_gemma4_shape_has_shared_kv_layers_and_per_layer_inputs() {
    let extra = "qk_norm = true\nsliding_window = 8\nrope_local_theta = 10000.0\n\
        global_head_dim = 512\nglobal_rope_dim = 128\nper_layer_embedding_dim = 256\n\
        kv_shared_layers = 2\nglobal_layers = [2, 5]\nffn_per_layer = [512, 512, 512, 512, 1024, 1024]\n\
        final_logit_softcap = 30.0";
    let quant = format!(
        "{SEPARATE}per_layer_token_embd = \"Q4_K\"\nper_layer_model_proj = \"Q8_0\"\n\
         per_layer_inp_gate = \"Q4_K\"\nper_layer_proj = \"Q4_K\"\n"
    );
    let mut shape = tiny_shape(extra, &quant);
    shape.layers = 6;
    shape.heads = 2;
    shape.kv_heads = 1;
    shape.head_dim = 256;
    shape.rope_dim = 256;
    let h = write_load_and_run("tiny-gemma4", "gemma4", &shape);
    // Layers 4 and 5 are KV-shared: queries only.
    assert!(h.tensor("blk.3.attn_k.weight").is_some());
    assert!(h.tensor("blk.4.attn_k.weight").is_none());
    assert!(h.tensor("blk.5.attn_v.weight").is_none());
    assert_eq!(
        h.tensor("blk.5.attn_q.weight").unwrap().dims,
        [256, 2 * 512]
    );
    assert_eq!(h.tensor("blk.4.ffn_up.weight").unwrap().dims, [256, 1024]);
    assert_eq!(
        h.tensor("per_layer_token_embd.weight").unwrap().dims,
        [6 * 256, 320]
    );
    let pattern = h
        .get_array("gemma4.attention.sliding_window_pattern")
        .unwrap();
    assert_eq!(pattern[2], MetaValue::Bool(false));
    assert_eq!(pattern[3], MetaValue::Bool(true));
}

#[test]
fn an_impossible_quant_mix_is_a_clear_error() {
    let mut shape = tiny_shape("", SEPARATE);
    shape.hidden = 320; // Q4_K rows must be multiples of 256
    let err = plan(source("bad", "llama", &shape)).err().unwrap();
    let text = format!("{err:#}");
    assert!(text.contains("block size 256"), "{text}");
    let mut shape = tiny_shape("", SEPARATE);
    shape.quant.remove("ffn_up");
    let err = format!("{:#}", plan(source("bad", "llama", &shape)).err().unwrap());
    assert!(err.contains("ffn_up"), "{err}");
}
