// llama.cpp's answers for the tiny reference models: what taper's decoder is checked against.
//
// Built by scripts/make-reference against the static libraries of the llama.cpp build that
// scripts/llama-cpp makes; driven by scripts/reference/make_tiny.py. Two commands:
//
//   llama_reference quantize TYPE N_PER_ROW IN OUT
//       IN holds rows of N_PER_ROW little-endian f32 values; OUT gets them quantized to TYPE
//       (q4_k or q6_k) by ggml's own quantizer without an importance matrix, because the
//       Python GGUF package can dequantize the k-quants but not make them.
//
//   llama_reference run MODEL N_CTX KV_TYPE REPACK TOKEN...
//       One context on the CPU backend, one thread, flash attention off, KV cache KV_TYPE (f32
//       or f16), weight repacking on (REPACK 1) or off (0). Prints one JSON object:
//         batched      logits of every position, the whole sequence decoded in one call;
//         greedy, greedy_step_logits
//                      eight greedy tokens continuing from that state, and the logits each
//                      was chosen from (row 0 is the last batched row);
//         incremental  the same sequence again from an empty cache, one token a call;
//         n_ctx, desc, warnings
//                      the context llama.cpp made, its model description, its warnings.

#include "ggml.h"
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GREEDY_STEPS 8

static char warnings[16384];

// Keeps llama.cpp's warnings (they are recorded in the reference) and drops its chatter.
static void on_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level != GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_ERROR) {
        return;
    }
    size_t used = strlen(warnings);
    if (used + strlen(text) + 1 < sizeof warnings) {
        strcat(warnings, text);
    }
}

static void die(const char *what) {
    fprintf(stderr, "llama_reference: %s\n%s", what, warnings);
    exit(1);
}

static void *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open the input");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *data = malloc(n > 0 ? (size_t)n : 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) die("cannot read the input");
    fclose(f);
    *size = (size_t)n;
    return data;
}

static int quantize(int argc, char **argv) {
    if (argc != 6) die("usage: quantize TYPE N_PER_ROW IN OUT");
    enum ggml_type type;
    if (strcmp(argv[2], "q4_k") == 0) {
        type = GGML_TYPE_Q4_K;
    } else if (strcmp(argv[2], "q6_k") == 0) {
        type = GGML_TYPE_Q6_K;
    } else {
        die("TYPE is q4_k or q6_k");
    }
    long n_per_row = atol(argv[3]);
    size_t size;
    float *src = read_all(argv[4], &size);
    if (n_per_row <= 0 || size % (sizeof(float) * (size_t)n_per_row) != 0) die("ragged rows");
    long rows = (long)(size / sizeof(float) / (size_t)n_per_row);
    size_t row_bytes = ggml_row_size(type, n_per_row);
    void *dst = malloc(row_bytes * (size_t)rows);
    if (!dst) die("out of memory");
    ggml_quantize_init(type);
    size_t written = ggml_quantize_chunk(type, src, dst, 0, rows, n_per_row, NULL);
    FILE *out = fopen(argv[5], "wb");
    if (!out || fwrite(dst, 1, written, out) != written || fclose(out) != 0) die("cannot write");
    free(src);
    free(dst);
    return 0;
}

static void print_row(const float *logits, int n_vocab) {
    putchar('[');
    for (int i = 0; i < n_vocab; i++) {
        printf(i ? ",%.9g" : "%.9g", logits[i]);
    }
    putchar(']');
}

static int argmax(const float *logits, int n_vocab) {
    int best = 0;
    for (int i = 1; i < n_vocab; i++) {
        if (logits[i] > logits[best]) best = i;
    }
    return best;
}

// Decodes tokens[0..n) at positions pos0.., asking for the logits of every one of them.
static void decode(struct llama_context *ctx, const llama_token *tokens, int n, int pos0) {
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        batch.token[i] = tokens[i];
        batch.pos[i] = pos0 + i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    if (llama_decode(ctx, batch) != 0) die("llama_decode failed");
    llama_batch_free(batch);
}

static void print_json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            printf("\\%c", *s);
        } else if (*s == '\n') {
            printf("\\n");
        } else if ((unsigned char)*s >= 0x20) {
            putchar(*s);
        }
    }
    putchar('"');
}

static int run(int argc, char **argv) {
    if (argc < 7) die("usage: run MODEL N_CTX KV_TYPE REPACK TOKEN...");
    int n_tokens = argc - 6;
    llama_token *tokens = calloc((size_t)n_tokens, sizeof *tokens);
    if (!tokens) die("out of memory");
    for (int i = 0; i < n_tokens; i++) tokens[i] = atoi(argv[6 + i]);
    enum ggml_type kv = strcmp(argv[4], "f16") == 0 ? GGML_TYPE_F16 : GGML_TYPE_F32;

    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.use_extra_bufts = atoi(argv[5]) != 0;
    struct llama_model *model = llama_model_load_from_file(argv[2], mp);
    if (!model) die("the model does not load");

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)atoi(argv[3]);
    cp.n_batch = cp.n_ubatch = 128;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = cp.type_v = kv;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) die("no context");
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    printf("{\"batched\":[");
    decode(ctx, tokens, n_tokens, 0);
    for (int i = 0; i < n_tokens; i++) {
        if (i) putchar(',');
        print_row(llama_get_logits_ith(ctx, i), n_vocab);
    }
    printf("],\"greedy_step_logits\":[");
    int greedy[GREEDY_STEPS];
    const float *last = llama_get_logits_ith(ctx, n_tokens - 1);
    for (int step = 0; step < GREEDY_STEPS; step++) {
        if (step) {
            decode(ctx, &greedy[step - 1], 1, n_tokens + step - 1);
            last = llama_get_logits_ith(ctx, 0);
            putchar(',');
        }
        print_row(last, n_vocab);
        greedy[step] = argmax(last, n_vocab);
    }
    printf("],\"greedy\":[");
    for (int step = 0; step < GREEDY_STEPS; step++) printf(step ? ",%d" : "%d", greedy[step]);

    printf("],\"incremental\":[");
    llama_memory_clear(llama_get_memory(ctx), true);
    for (int i = 0; i < n_tokens; i++) {
        decode(ctx, &tokens[i], 1, i);
        if (i) putchar(',');
        print_row(llama_get_logits_ith(ctx, 0), n_vocab);
    }
    char desc[256];
    llama_model_desc(model, desc, sizeof desc);
    printf("],\"n_ctx\":%u,\"desc\":", llama_n_ctx(ctx));
    print_json_string(desc);
    printf(",\"warnings\":");
    print_json_string(warnings);
    printf("}\n");

    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(tokens);
    return 0;
}

int main(int argc, char **argv) {
    llama_log_set(on_log, NULL);
    if (argc >= 2 && strcmp(argv[1], "quantize") == 0) return quantize(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "run") == 0) return run(argc, argv);
    die("usage: llama_reference quantize|run ...");
    return 1;
}
