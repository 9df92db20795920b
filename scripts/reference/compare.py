"""Compares freshly made reference data with the repository's copy (make-reference --check).

    python compare.py FIXTURES MADE

GGUF files and token ids must be identical. Logits may differ by float noise, because
llama.cpp's kernels sum in other orders on other CPUs: 1e-5 for the F32 models, 5e-2 for the
quantized ones (whose activations llama.cpp quantizes, and whose weight repacking depends on
the CPU: it alone moves llama_q4_k by 1.5e-2). Gemma's F32 models get 2e-3: ggml computes
their GELU by rounding its input to f16 and looking the result up in a table, so sum-order
noise that tips one input across an f16 rounding boundary moves that activation by a whole
table step (about 1e-3 near 1); made on an AMD Zen 2 (AVX2) against this copy from a Zen 4
(AVX-512), gemma4_f32's logits moved by 3.6e-4 and every llama-family F32 model by under 1e-5.
Greedy continuations must be the same.
"""

import glob
import json
import os
import sys

import numpy as np

LOGIT_KEYS = ["logits", "greedy_step_logits", "logits_dequantized_f32_model"]
EXACT_KEYS = ["tokens", "greedy_continuation", "greedy_continuation_dequantized_f32_model",
              "model_sha256", "numpy_seed"]


def main():
    fixtures, made = sys.argv[1:3]
    problems = []
    names, made_names = (data_files(os.path.join(d, "tiny")) for d in (fixtures, made))
    if names != made_names:
        problems.append(f"file lists differ: {names} vs {made_names}")
    for name in set(names) & set(made_names):
        a, b = (os.path.join(d, "tiny", name) for d in (fixtures, made))
        if name.endswith(".gguf"):
            if open(a, "rb").read() != open(b, "rb").read():
                problems.append(f"{name}: the rebuilt file differs")
        elif name.endswith(".json"):
            problems += compare_json(name, json.load(open(a)), json.load(open(b)))
    ids = [json.load(open(os.path.join(d, "tokenizer-ids.json"))) for d in (fixtures, made)]
    if ids[0] != ids[1]:
        problems.append("tokenizer-ids.json: llama.cpp's ids differ")
    if problems:
        sys.exit("make-reference --check: the repository's reference data is not what the "
                 "generator makes:\n  " + "\n  ".join(problems))
    print(f"make-reference --check: {len(names)} files and the token ids agree")


def data_files(folder):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "*"))
                  if p.endswith((".gguf", ".json")))


def compare_json(name, want, got):
    problems = [f"{name}: {k} differs" for k in EXACT_KEYS if want.get(k) != got.get(k)]
    if want["tensor_types"] != ["F32"]:
        tol = 5e-2
    elif name.startswith("gemma"):
        tol = 2e-3
    else:
        tol = 1e-5
    for key in LOGIT_KEYS:
        if key not in want:
            continue
        diff = float(np.max(np.abs(np.asarray(want[key]) - np.asarray(got[key]))))
        if diff > tol:
            problems.append(f"{name}: {key} moved by {diff:.3g} (> {tol})")
    return problems


if __name__ == "__main__":
    main()
