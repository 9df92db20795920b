"""llama.cpp's token ids for a few texts on the two real test models (llama-tokenize).

    python tokenizer_ids.py LLAMA_TOKENIZE MODELS_DIR OUT_JSON

Each text is tokenized as written: no BOS, no escape processing, special tokens not parsed.
"""

import json
import os
import subprocess
import sys
import tempfile

MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]
TEXTS = [
    "Hello, world!",
    "  leading spaces and\ttabs\nnew line",
    "Grüße aus München 🚀 — naïve café",
    "def add(a, b):\n    return a + b\n",
    "In 2024, 17% of 300 items cost $4.99 each.",
    "日本語のテキストを分割します。",
    "I'm sure you'll see they'd've done it",
    "trailing spaces   ",
]


def tokenize(binary, model, text, workdir):
    path = os.path.join(workdir, "text")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    out = subprocess.run([binary, "-m", model, "-f", path, "--ids", "--no-bos", "--no-escape",
                          "--log-disable"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    binary, models, out = sys.argv[1:4]
    doc = {}
    with tempfile.TemporaryDirectory() as workdir:
        for name in MODELS:
            model = os.path.join(models, name)
            doc[name] = [{"text": t, "ids": tokenize(binary, model, t, workdir)} for t in TEXTS]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"make-reference: {os.path.basename(out)}: {len(TEXTS)} texts on {len(MODELS)} models")


if __name__ == "__main__":
    main()
