#!/usr/bin/env python3
"""Writes seed corpora for the fuzz targets from real inputs (see docs/fuzzing.md).

Usage: fuzz-seeds.py CORPUS_DIR  (writes CORPUS_DIR/<target>/seed-*)

- gguf_header: every GGUF in the tiny reference set (or $TAPER_FUZZ_GGUFS), rewritten with
  the same metadata and tensor directory but each tensor shrunk to one block, so seeds are a
  few kilobytes instead of megabytes.
- tokenizer: the first few hundred tokens (with types and the merges among them) of the
  vocabularies in $TAPER_HOME/models, in the layout taper::fuzzing::tokenizer reads.
- chat_template: assets/templates/*.jinja and tests/fixtures/*.jinja with a conversation.
- config: config.example.toml.
Only the Python standard library is used.
"""
import glob
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION, ITEM = b"\xff", b"\xfe"

# ggml type id -> (block size, bytes per block)
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
          8: (32, 34), 9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144),
          13: (256, 176), 14: (256, 210), 15: (256, 292), 30: (1, 2)}
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            item, n = self.take("<I"), self.take("<Q")
            return (item, [self.value(item) for _ in range(n)])
        return self.take(SCALARS[t])


def read_gguf(path):
    """(metadata as [(key, type, value)], tensors as [(name, dims, type)])."""
    with open(path, "rb") as f:
        r = Reader(f.read())
    assert r.data[:4] == b"GGUF", path
    r.pos = 8
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta = []
    for _ in range(n_kv):
        key, t = r.string(), r.take("<I")
        meta.append((key, t, r.value(t)))
    tensors = []
    for _ in range(n_tensors):
        name, nd = r.string(), r.take("<I")
        dims = [r.take("<Q") for _ in range(nd)]
        t = r.take("<I")
        r.take("<Q")
        tensors.append((name, dims, t))
    return meta, tensors


def pack_string(s):
    return struct.pack("<Q", len(s)) + s


def pack_value(t, v):
    if t == 8:
        return pack_string(v)
    if t == 9:
        item, items = v
        return struct.pack("<IQ", item, len(items)) + b"".join(pack_value(item, x) for x in items)
    return struct.pack(SCALARS[t], v)


def write_small_gguf(meta, tensors):
    """The same header with every tensor shrunk to a single block of zeros."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta))
    for key, t, v in meta:
        out += pack_string(key) + struct.pack("<I", t) + pack_value(t, v)
    offset, sizes = 0, []
    for name, dims, t in tensors:
        block, size = BLOCKS.get(t, (1, 4))
        out += pack_string(name) + struct.pack("<I", 1) + struct.pack("<Q", block)
        out += struct.pack("<IQ", t, offset)
        sizes.append(size)
        offset += (size + 31) // 32 * 32
    out += b"\0" * (-len(out) % 32)
    for size in sizes:
        out += b"\0" * ((size + 31) // 32 * 32)
    return out


def tokenizer_seed(meta, n_tokens, text):
    m = {key.decode(): v for key, _, v in meta}
    model = m["tokenizer.ggml.model"].decode()
    arch = m.get("general.architecture", b"llama").decode()
    pre = m.get("tokenizer.ggml.pre", b"default").decode()
    models, arches = ["gpt2", "llama", "gemma4", "bert"], ["llama", "gemma3", "phi3", "qwen2", "gemma"]
    pres = ["default", "llama-bpe", "qwen2", "tekken", "gpt-4o"]
    settings = bytes([
        models.index(model) if model in models else 0,
        arches.index(arch) if arch in arches else 0,
        pres.index(pre) if pre in pres else 0,
    ])
    for name in ["bos", "eos", "unknown", "padding"]:
        token_id = m.get(f"tokenizer.ggml.{name}_token_id")
        settings += bytes([token_id if token_id is not None and token_id < n_tokens else 0xFF])
    settings += bytes([1 if m.get("tokenizer.ggml.add_bos_token") else 0])
    tokens = m["tokenizer.ggml.tokens"][1][:n_tokens]
    known = set(tokens)
    merges = [mg for mg in m.get("tokenizer.ggml.merges", (8, []))[1]
              if all(p in known for p in mg.split(b" ", 1)) and b"".join(mg.split(b" ", 1)) in known]
    types = bytes(t % 256 for t in m.get("tokenizer.ggml.token_type", (5, []))[1][:n_tokens])
    ids = b"".join(struct.pack("<H", i) for i in range(0, n_tokens, 7))
    return SECTION.join([settings, ITEM.join(tokens), ITEM.join(merges), types,
                         text.encode(), ids])


def main():
    corpus = sys.argv[1]
    for target in ["gguf_header", "tokenizer", "chat_template", "config", "session_file"]:
        os.makedirs(os.path.join(corpus, target), exist_ok=True)

    def put(target, name, data):
        with open(os.path.join(corpus, target, "seed-" + name), "wb") as f:
            f.write(data)

    ggufs = os.environ.get("TAPER_FUZZ_GGUFS",
                           os.path.join(ROOT, "tests/fixtures/reference/tiny/*.gguf"))
    for path in sorted(glob.glob(ggufs)):
        meta, tensors = read_gguf(path)
        put("gguf_header", os.path.basename(path), write_small_gguf(meta, tensors))

    text = "Hello, world! 1234 héllo  日本語 🚀\n\t<|im_end|><end_of_turn> ab  a"
    models = os.path.join(os.environ.get("TAPER_HOME", ""), "models", "*.gguf")
    for path in sorted(glob.glob(models)):
        meta, _ = read_gguf(path)
        if any(k == b"tokenizer.ggml.tokens" for k, _, _ in meta):
            for n in [300, 1000]:
                put("tokenizer", f"{os.path.basename(path)}-{n}", tokenizer_seed(meta, n, text))

    conversation = SECTION.join([b"\x00You are terse.", b"\x01Hi there",
                                 b"\x02Hello! How can I help?", b"\x81What is 2+2?"])
    for path in sorted(glob.glob(os.path.join(ROOT, "assets/templates/*.jinja"))
                       + glob.glob(os.path.join(ROOT, "tests/fixtures/*.jinja"))):
        with open(path, "rb") as f:
            put("chat_template", os.path.basename(path), f.read() + SECTION + conversation)

    with open(os.path.join(ROOT, "config.example.toml"), "rb") as f:
        put("config", "config.example.toml", f.read())

    for path in sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/sessions/*.json"))):
        with open(path, "rb") as f:
            put("session_file", os.path.basename(path), f.read())


if __name__ == "__main__":
    main()
