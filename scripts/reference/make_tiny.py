"""The tiny random-weight reference models and llama.cpp's logits for them.

Run by scripts/make-reference (which provides numpy, gguf-py and the llama_reference program):

    python make_tiny.py OUT_DIR LLAMA_REFERENCE_BINARY

Each model is built from a fixed numpy seed, drawn tensor by tensor in the order listed below
(that order is part of the recipe: it fixes every value), written with gguf-py, and run through
llama.cpp's C API by llama_reference. The JSON beside each GGUF holds what the tests read.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

VOCAB = 256
# 24 ids below the vocabulary size, longer than the gemma sliding window of 8, 42 twice.
TOKENS = [1, 17, 42, 99, 3, 250, 128, 7, 64, 200, 33, 5, 42, 180, 91, 12, 255, 76, 140, 2,
          222, 58, 111, 9]
CONTEXT = 128
# Every greedy step must be decided by more than float noise, or the reference is useless.
MIN_GREEDY_MARGIN = 5e-4


class Draw:
    """Weights from one seeded generator, in call order. Scales: embeddings and the output
    0.02; Q/K (and the fused QKV's Q and K rows), attention output and FFN down 0.1; V, FFN
    gate/up 0.05; biases 0.1; norm weights 1 + N(0, 0.1). The projections are larger than 0.02
    so that attention is far from uniform and RoPE, masks and KV sharing move the logits."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def normal(self, scale, rows, cols=None):
        shape = (rows,) if cols is None else (rows, cols)
        return self.rng.normal(0, scale, shape).astype(np.float32)

    def norm(self, n):
        return (1 + self.rng.normal(0, 0.1, (n,))).astype(np.float32)

    def uniform(self, low, high, n):
        return self.rng.uniform(low, high, (n,)).astype(np.float32)


def dense_layer(d, e, q_rows, kv_rows, extras=()):
    """attn_norm, q/k/v (with `extras` spliced in after their names), output, ffn."""
    t = [("attn_norm", d.norm(e)), ("attn_q", d.normal(0.1, q_rows, e))]
    if "qkv_bias" in extras:
        t.append(("attn_q.bias", d.normal(0.1, q_rows)))
    t.append(("attn_k", d.normal(0.1, kv_rows, e)))
    if "qkv_bias" in extras:
        t.append(("attn_k.bias", d.normal(0.1, kv_rows)))
    t.append(("attn_v", d.normal(0.05, kv_rows, e)))
    if "qkv_bias" in extras:
        t.append(("attn_v.bias", d.normal(0.1, kv_rows)))
    t.append(("attn_output", d.normal(0.1, e, q_rows)))
    return t


def llama_like(d, spec):
    """llama, qwen2, qwen3: one recipe with biases or per-head norms switched on."""
    e, ff, heads, kv, hd, layers = (spec[k] for k in ("e", "ff", "heads", "kv", "hd", "layers"))
    t = [("token_embd", d.normal(0.02, VOCAB, e))]
    for i in range(layers):
        layer = dense_layer(d, e, heads * hd, kv * hd, spec.get("extras", ()))
        if "qk_norm" in spec.get("extras", ()):
            layer += [("attn_q_norm", d.norm(hd)), ("attn_k_norm", d.norm(hd))]
        layer += [("ffn_norm", d.norm(e)), ("ffn_gate", d.normal(0.05, ff, e)),
                  ("ffn_up", d.normal(0.05, ff, e)), ("ffn_down", d.normal(0.1, e, ff))]
        t += [(f"blk.{i}.{name}", w) for name, w in layer]
    t.append(("output_norm", d.norm(e)))
    if not spec.get("tied"):
        t.append(("output", d.normal(0.02, VOCAB, e)))
    return t


def phi3(d, spec):
    """Fused QKV (Q, K, V rows drawn in turn) and fused gate+up; Phi-4-mini's rope factors
    (short in [1, 2), long in [1, 31)) are drawn last but stored long first."""
    e, ff, heads, kv, hd = (spec[k] for k in ("e", "ff", "heads", "kv", "hd"))
    t = [("token_embd", d.normal(0.02, VOCAB, e))]
    for i in range(2):
        norm = d.norm(e)
        qkv = np.concatenate([d.normal(0.1, heads * hd, e), d.normal(0.1, kv * hd, e),
                              d.normal(0.05, kv * hd, e)])
        layer = [("attn_norm", norm), ("attn_qkv", qkv),
                 ("attn_output", d.normal(0.1, e, heads * hd)), ("ffn_norm", d.norm(e)),
                 ("ffn_up", d.normal(0.05, 2 * ff, e)), ("ffn_down", d.normal(0.1, e, ff))]
        t += [(f"blk.{i}.{name}", w) for name, w in layer]
    t.append(("output_norm", d.norm(e)))
    if spec.get("rope_factors"):
        short = d.uniform(1, 2, spec["rope_factors"])
        long = d.uniform(1, 31, spec["rope_factors"])
        t += [("rope_factors_long", long), ("rope_factors_short", short)]
    else:
        t.append(("output", d.normal(0.02, VOCAB, e)))
    return t


def gemma3(d, spec):
    e, ff, heads, kv, hd = (spec[k] for k in ("e", "ff", "heads", "kv", "hd"))
    t = [("token_embd", d.normal(0.02, VOCAB, e))]
    for i in range(6):
        layer = dense_layer(d, e, heads * hd, kv * hd)
        layer += [("attn_q_norm", d.norm(hd)), ("attn_k_norm", d.norm(hd)),
                  ("post_attention_norm", d.norm(e)), ("ffn_norm", d.norm(e)),
                  ("ffn_gate", d.normal(0.05, ff, e)), ("ffn_up", d.normal(0.05, ff, e)),
                  ("ffn_down", d.normal(0.1, e, ff)), ("post_ffw_norm", d.norm(e))]
        t += [(f"blk.{i}.{name}", w) for name, w in layer]
    t.append(("output_norm", d.norm(e)))
    return t


GEMMA4_SLIDING = [True, True, False, True, True, False]
GEMMA4_FF = [128, 128, 128, 256, 256, 256]
GEMMA4_SHARED = 3


def gemma4(d, spec):
    """Per-layer inputs (16 a layer), head_dim 16 sliding / 32 global, one KV head, the last
    three layers reading another layer's cache (no K/V weights), V normed without a weight,
    a scalar output scale per layer in [0.5, 1)."""
    e, heads, per_layer = spec["e"], spec["heads"], 16
    t = [("token_embd", d.normal(0.02, VOCAB, e)),
         ("per_layer_token_embd", d.normal(0.02, VOCAB, 6 * per_layer)),
         ("per_layer_model_proj", d.normal(0.02, 6 * per_layer, e)),
         ("per_layer_proj_norm", d.norm(per_layer)),
         # Only the first four frequency pairs rotate on the global layers.
         ("rope_freqs", np.array([1.0] * 4 + [1e30] * 12, dtype=np.float32))]
    for i in range(6):
        hd = 16 if GEMMA4_SLIDING[i] else 32
        ff = GEMMA4_FF[i]
        layer = [("attn_norm", d.norm(e)), ("attn_q", d.normal(0.1, heads * hd, e)),
                 ("attn_q_norm", d.norm(hd))]
        if i < 6 - GEMMA4_SHARED:
            layer += [("attn_k", d.normal(0.1, hd, e)), ("attn_v", d.normal(0.05, hd, e)),
                      ("attn_k_norm", d.norm(hd))]
        layer += [("attn_output", d.normal(0.1, e, heads * hd)),
                  ("post_attention_norm", d.norm(e)), ("ffn_norm", d.norm(e)),
                  ("ffn_gate", d.normal(0.05, ff, e)), ("ffn_up", d.normal(0.05, ff, e)),
                  ("ffn_down", d.normal(0.1, e, ff)), ("post_ffw_norm", d.norm(e)),
                  ("inp_gate", d.normal(0.05, per_layer, e)),
                  ("proj", d.normal(0.1, e, per_layer)), ("post_norm", d.norm(e)),
                  ("layer_output_scale", d.uniform(0.5, 1.0, 1))]
        t += [(f"blk.{i}.{name}", w) for name, w in layer]
    t.append(("output_norm", d.norm(e)))
    return t


def meta_common(arch, name, ctx, spec, eps, rope_base):
    return [("general.name", "str", name), (f"{arch}.context_length", "u32", ctx),
            (f"{arch}.embedding_length", "u32", spec["e"]),
            (f"{arch}.block_count", "u32", spec.get("layers", 2)),
            (f"{arch}.feed_forward_length", "u32", spec["ff"]),
            (f"{arch}.attention.head_count", "u32", spec["heads"]),
            (f"{arch}.attention.head_count_kv", "u32", spec["kv"]),
            (f"{arch}.attention.layer_norm_rms_epsilon", "f32", eps),
            (f"{arch}.rope.freq_base", "f32", rope_base)]


def meta_tail(arch):
    return [("tokenizer.ggml.model", "str", "no_vocab"), (f"{arch}.vocab_size", "u32", VOCAB)]


SMALL = dict(e=128, ff=256, heads=4, kv=2, hd=32, layers=2)
WIDE = dict(e=256, ff=512, heads=4, kv=2, hd=64, layers=2)
QWEN3 = dict(SMALL, hd=64, extras=("qk_norm",), tied=True)
QWEN3_WIDE = dict(WIDE, extras=("qk_norm",), tied=True)


def llama_meta(name, spec):
    return (meta_common("llama", name, 2048, spec, 1e-5, 10000.0)
            + [("llama.rope.dimension_count", "u32", spec["hd"])] + meta_tail("llama"))


def qwen3_meta(name, spec):
    return (meta_common("qwen3", name, 40960, spec, 1e-6, 1e6)
            + [("qwen3.attention.key_length", "u32", spec["hd"]),
               ("qwen3.attention.value_length", "u32", spec["hd"])] + meta_tail("qwen3"))


def phi3_meta(name, spec, ctx, rot, window, extra):
    return (meta_common("phi3", name, ctx, spec, 1e-5, 10000.0)
            + [("phi3.rope.dimension_count", "u32", rot),
               ("phi3.rope.scaling.original_context_length", "u32", 4096),
               ("phi3.attention.sliding_window", "u32", window)] + extra + meta_tail("phi3"))


def gemma3_meta():
    spec = dict(e=64, ff=128, heads=4, kv=2, layers=6)
    return (meta_common("gemma3", "tiny-gemma3", 32768, spec, 1e-6, 1e6)
            + [("gemma3.attention.key_length", "u32", 32),
               ("gemma3.attention.value_length", "u32", 32),
               ("gemma3.rope.freq_base_swa", "f32", 10000.0),
               ("gemma3.rope.scaling.type", "str", "linear"),
               ("gemma3.rope.scaling.factor", "f32", 8.0),
               ("gemma3.attention.sliding_window", "u32", 8)] + meta_tail("gemma3"))


def gemma4_meta():
    spec = dict(e=64, ff=0, heads=4, kv=1, layers=6)
    common = meta_common("gemma4", "tiny-gemma4", 131072, spec, 1e-6, 1e6)
    common[4] = ("gemma4.feed_forward_length", "i32[]", GEMMA4_FF)
    return (common
            + [("gemma4.attention.key_length", "u32", 32),
               ("gemma4.attention.value_length", "u32", 32),
               ("gemma4.rope.dimension_count", "u32", 32),
               ("gemma4.attention.key_length_swa", "u32", 16),
               ("gemma4.attention.value_length_swa", "u32", 16),
               ("gemma4.rope.dimension_count_swa", "u32", 16),
               ("gemma4.rope.freq_base_swa", "f32", 10000.0),
               ("gemma4.attention.sliding_window", "u32", 8),
               ("gemma4.attention.sliding_window_pattern", "bool[]", GEMMA4_SLIDING),
               ("gemma4.attention.shared_kv_layers", "u32", GEMMA4_SHARED),
               ("gemma4.embedding_length_per_layer_input", "u32", 16),
               ("gemma4.final_logit_softcapping", "f32", 1.0)] + meta_tail("gemma4"))


def all_matrices(qtype):
    return lambda name, w: qtype if w.ndim == 2 else None


def k_quants(q6_names):
    """Q6_K for the named matrices (`ffn_down` of every layer, `output`, ...), Q4_K for every
    other one."""
    def pick(name, w):
        base = name.split(".")[-2]
        return None if w.ndim != 2 else Q.Q6_K if base in q6_names else Q.Q4_K
    return pick


PHI4_ATTN_FACTOR = float(np.sqrt(1 + np.log(131072 / 4096) / np.log(4096)))

# file stem → (arch, seed, weights, metadata, quantization, description, features, extra runs)
MODELS = {
    "llama_f32": ("llama", 1021, lambda d: llama_like(d, SMALL), llama_meta("tiny-llama", SMALL),
                  None, "llama: 2 layers, n_embd 128, 4 heads / 2 KV heads, head_dim 32, SwiGLU "
                  "FFN 256, RoPE normal (adjacent pairs) base 1e4, untied output",
                  ["gqa", "rope_norm", "untied_output", "swiglu"]),
    "llama_q8_0": ("llama", 1021, lambda d: llama_like(d, SMALL), llama_meta("tiny-llama", SMALL),
                   all_matrices(Q.Q8_0), "llama_f32's weights, every matrix Q8_0 (gguf-py)",
                   ["gqa", "rope_norm", "untied_output", "swiglu", "q8_0"]),
    "llama_q4_0": ("llama", 1021, lambda d: llama_like(d, SMALL), llama_meta("tiny-llama", SMALL),
                   all_matrices(Q.Q4_0), "llama_f32's weights, every matrix Q4_0 (gguf-py)",
                   ["gqa", "rope_norm", "untied_output", "swiglu", "q4_0"]),
    "llama_q4_k": ("llama", 1002, lambda d: llama_like(d, WIDE),
                   llama_meta("tiny-llama-256", WIDE), k_quants(("ffn_down", "output")),
                   "llama, n_embd 256, head_dim 64, FFN 512: Q4_K matrices, Q6_K for output "
                   "and ffn_down (ggml's quantizer, no importance matrix)",
                   ["gqa", "rope_norm", "untied_output", "swiglu", "q4_k", "q6_k"]),
    "qwen2_f32": ("qwen2", 2001, lambda d: llama_like(d, dict(SMALL, extras=("qkv_bias",),
                                                                tied=True)),
                  meta_common("qwen2", "tiny-qwen2", 32768, SMALL, 1e-6, 1e6)
                  + meta_tail("qwen2"),
                  None, "qwen2: Q/K/V biases, RoPE NeoX base 1e6, tied output",
                  ["gqa", "qkv_bias", "rope_neox", "tied_output", "swiglu"]),
    "qwen3_f32": ("qwen3", 3121, lambda d: llama_like(d, QWEN3), qwen3_meta("tiny-qwen3", QWEN3),
                  None, "qwen3: per-head Q/K RMSNorm before RoPE, head_dim 64 (Q width 256 ≠ "
                  "n_embd 128), RoPE NeoX base 1e6, tied output",
                  ["gqa", "qk_norm", "head_dim_ne_n_embd_over_n_head", "rope_neox",
                   "tied_output", "swiglu"]),
    "qwen3_q8_0": ("qwen3", 3121, lambda d: llama_like(d, QWEN3),
                   qwen3_meta("tiny-qwen3", QWEN3), all_matrices(Q.Q8_0),
                   "qwen3_f32's weights, every matrix Q8_0 (gguf-py)",
                   ["gqa", "qk_norm", "rope_neox", "tied_output", "swiglu", "q8_0"]),
    "qwen3_q4_0": ("qwen3", 3121, lambda d: llama_like(d, QWEN3),
                   qwen3_meta("tiny-qwen3", QWEN3), all_matrices(Q.Q4_0),
                   "qwen3_f32's weights, every matrix Q4_0 (gguf-py)",
                   ["gqa", "qk_norm", "rope_neox", "tied_output", "swiglu", "q4_0"]),
    "qwen3_q4_k": ("qwen3", 3002, lambda d: llama_like(d, QWEN3_WIDE),
                   qwen3_meta("tiny-qwen3-256", QWEN3_WIDE),
                   k_quants(("ffn_down", "token_embd")),
                   "qwen3, n_embd 256, FFN 512, tied: Q4_K matrices, Q6_K for token_embd and "
                   "ffn_down (ggml's quantizer, no importance matrix)",
                   ["gqa", "qk_norm", "rope_neox", "tied_output", "swiglu", "q4_k", "q6_k"]),
    "phi3_phi4mini_f32": ("phi3", 4001,
                          lambda d: phi3(d, dict(SMALL, rope_factors=12)),
                          phi3_meta("tiny-phi4-mini", SMALL, 131072, 24, 262144,
                                    [("phi3.rope.scaling.attn_factor", "f32",
                                      PHI4_ATTN_FACTOR)]),
                          None, "Phi-4-mini style: fused QKV, GQA 4/2, partial rotary (24 of "
                          "32 dims), LongRoPE short/long factors, fused gate+up, tied output",
                          ["gqa", "fused_qkv", "partial_rotary", "longrope", "fused_gate_up",
                           "tied_output"]),
    "phi3_mini_f32": ("phi3", 4022, lambda d: phi3(d, dict(SMALL, kv=4)),
                      phi3_meta("tiny-phi3-mini", dict(SMALL, kv=4), 4096, 32, 2047, []),
                      None, "Phi-3-mini style: fused QKV, 4 KV heads, full rotary, fused "
                      "gate+up, untied output",
                      ["fused_qkv", "fused_gate_up", "untied_output"]),
    "gemma3_f32": ("gemma3", 5011, lambda d: gemma3(d, dict(e=64, ff=128, heads=4, kv=2, hd=32)),
                   gemma3_meta(), None,
                   "gemma3: 6 layers, sliding window 8 on layers 0-4, global layer 5 with "
                   "linear RoPE scaling x8, Q/K norm, sandwich norms, GeGLU, tied output",
                   ["gqa", "sliding_window", "qk_norm", "sandwich_norms", "embedding_scale",
                    "geglu", "tied_output"]),
    "gemma4_f32": ("gemma4", 6051, lambda d: gemma4(d, dict(e=64, heads=4)), gemma4_meta(), None,
                   "gemma4 (E2B/E4B style): S S F S S F, head_dim 16/32, MQA, proportional "
                   "RoPE on global layers, 3 KV-shared layers, per-layer inputs and FFN widths, "
                   "V norm, layer output scales, final logit softcapping 1.0",
                   ["mqa", "sliding_window", "shared_kv", "per_layer_inputs", "v_norm",
                    "softcap", "tied_output"]),
}

# Runs beyond the default context: Phi-4-mini picks its long rope factors past 4096.
EXTRA_CONTEXTS = {"phi3_phi4mini_f32": [8192]}


def quantize(binary, qtype, w, workdir):
    if qtype in (Q.Q8_0, Q.Q4_0):
        return gguf.quants.quantize(w, qtype)
    name = {Q.Q4_K: "q4_k", Q.Q6_K: "q6_k"}[qtype]
    src, dst = os.path.join(workdir, "rows.f32"), os.path.join(workdir, "rows.q")
    np.ascontiguousarray(w, dtype="<f4").tofile(src)
    subprocess.run([binary, "quantize", name, str(w.shape[1]), src, dst], check=True)
    return np.fromfile(dst, dtype=np.uint8).reshape(w.shape[0], -1)


def write_gguf(path, arch, meta, tensors):
    """tensors: (name, array, qtype or None); quantized arrays are raw bytes of that type."""
    writer = gguf.GGUFWriter(path, arch)
    for key, kind, value in meta:
        if kind == "str":
            writer.add_string(key, value)
        elif kind == "u32":
            writer.add_uint32(key, value)
        elif kind == "f32":
            writer.add_float32(key, value)
        else:
            writer.add_array(key, value)
    for name, w, qtype in tensors:
        if qtype is None:
            writer.add_tensor(name, w)
        else:
            writer.add_tensor(name, w, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def run(binary, model, context, kv="f32", repack=True):
    out = subprocess.run([binary, "run", model, str(context), kv, "1" if repack else "0"]
                         + [str(t) for t in TOKENS], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def margins(step_logits):
    return [float(f"{np.diff(np.sort(np.asarray(row, np.float32))[-2:])[0]:.6g}")
            for row in step_logits]


def as_f32(rows):
    """Logits with 9 significant digits (exact for f32), as llama_reference prints them."""
    return [[float(f"{x:.9g}") for x in row] for row in rows]


def reference(stem, binary, out_dir, workdir):
    arch, seed, weights, meta, qtypes, description, features = MODELS[stem]
    drawn = weights(Draw(seed))
    named = [(f"{name}.weight" if not name.endswith(".bias") else name, w)
             for name, w in drawn]
    tensors, twin = [], []
    for name, w in named:
        qtype = qtypes(name, w) if qtypes else None
        if qtype is None:
            tensors.append((name, w, None))
            twin.append((name, w, None))
        else:
            q = quantize(binary, qtype, w, workdir)
            tensors.append((name, q, qtype))
            twin.append((name, gguf.quants.dequantize(q, qtype).astype(np.float32), None))
    path = os.path.join(out_dir, f"{stem}.gguf")
    write_gguf(path, arch, meta, tensors)

    doc = {"format": "tiny-llamacpp-reference/2", "model_file": f"{stem}.gguf",
           "model_sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(), "arch": arch,
           "description": description, "features": features,
           "tensor_types": sorted({(t.name if t is not None else "F32")
                                   for _, _, t in tensors}),
           "n_params": int(sum(w.size for _, w in named)), "numpy_seed": seed,
           "llama_cpp": {"source": "llama-cpp-python 0.3.36 source package, vendor/llama.cpp",
                         "build": "scripts/llama-cpp (CPU, Release, this machine's features)"}}
    outputs = {}
    for context in [CONTEXT] + EXTRA_CONTEXTS.get(stem, []):
        main = run(binary, path, context)
        f16 = run(binary, path, context, kv="f16")
        step_margins = margins(main["greedy_step_logits"])
        if min(step_margins) < MIN_GREEDY_MARGIN:
            sys.exit(f"{stem}: a greedy step is decided by {min(step_margins)}, too close")
        per_position = [max_diff(a, b) for a, b in zip(main["batched"], main["incremental"])]
        logits = np.asarray(main["batched"], np.float64)
        result = dict(doc)
        result["run"] = {"n_ctx_requested": context, "n_ctx_effective": main["n_ctx"],
                         "kv_cache_type": "f32", "n_batch": 128, "threads": 1,
                         "flash_attention": False, "llama_model_desc": main["desc"]}
        result.update({
            "n_vocab": VOCAB, "tokens": TOKENS, "positions": list(range(len(TOKENS))),
            "logits": as_f32(main["batched"]), "greedy_continuation": main["greedy"],
            "greedy_top2_margin": step_margins,
            "greedy_step_logits": as_f32(main["greedy_step_logits"]),
            "max_abs_diff_batched_vs_incremental": max(per_position),
            "per_position_max_abs_diff_batched_vs_incremental": per_position,
            "max_abs_diff_f16_kv_vs_f32_kv": max_diff(f16["batched"], main["batched"]),
            "max_abs_logit": float(np.max(np.abs(logits))),
            "rms_logit": float(np.sqrt(np.mean(logits ** 2))),
        })
        if qtypes:
            twin_path = os.path.join(workdir, f"{stem}_dequantized.gguf")
            write_gguf(twin_path, arch, meta, twin)
            deq = run(binary, twin_path, context)
            no_repack = run(binary, path, context, repack=False)
            result.update({
                "logits_dequantized_f32_model": as_f32(deq["batched"]),
                "greedy_continuation_dequantized_f32_model": deq["greedy"],
                "max_abs_diff_vs_dequantized_f32_model": max_diff(main["batched"],
                                                                  deq["batched"]),
                "max_abs_diff_weight_repack_on_vs_off": max_diff(main["batched"],
                                                                 no_repack["batched"]),
            })
        result["llama_cpp_warnings"] = [w for w in main["warnings"].splitlines() if w.strip()]
        suffix = "" if context == CONTEXT else f"_ctx{context}"
        outputs[f"{stem}{suffix}.json"] = result
    for name, result in outputs.items():
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(dumps(result))
        print(f"make-reference: {name}: greedy {result['greedy_continuation']}")


def dumps(doc):
    """One key a line, a matrix one row a line: small files whose diffs can be read."""
    def value(v):
        if isinstance(v, list) and v and isinstance(v[0], list):
            rows = ",\n  ".join(json.dumps(row, separators=(",", ":")) for row in v)
            return f"[\n  {rows}\n ]"
        return json.dumps(v, separators=(", ", ": "), ensure_ascii=False)
    lines = ",\n".join(f" {json.dumps(k)}: {value(v)}" for k, v in doc.items())
    return "{\n" + lines + "\n}\n"


def main():
    out_dir, binary = sys.argv[1], sys.argv[2]
    only = sys.argv[3:] or list(MODELS)
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as workdir:
        for stem in only:
            reference(stem, binary, out_dir, workdir)


if __name__ == "__main__":
    main()
