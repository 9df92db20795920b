//! The measuring side: one model, one thread count, in a process of its own.
//!
//! Each run starts from nothing (the previous run's model released): read the header, build
//! the tokenizer and chat template, load the weights (cold start); then a short chat turn on a
//! fresh cache (template, tokenize, prefill, first sample: time to first token) and greedy
//! decoding from there, every step timed and end-of-turn tokens ignored; then a prefill of
//! exactly N tokens of the passage on a fresh cache for every `--prompt-tokens` N. One
//! warm-up run is discarded. Rates are `crate::stats`' definitions, the ones the TUI shows.
//!
//! The cold start is the process's: after the warm-up the file is in the OS page cache, so it
//! measures parsing, tokenizer and template building and copying the weights, not the disk.
//! Peak memory is reset (Linux) before each run, so a run's peak is its own model's.

use super::prompt::{self, TextSide, SHAPE_ONLY_CHAT_TOKENS};
use super::summary::{quarter_rates, ModelReport, PrefillFigure, RunFigures};
use crate::engine::gguf::GgufHeader;
use crate::engine::model::{self, LanguageModel, ModelConfig};
use crate::engine::template::ChatTemplate;
use crate::engine::tokenizer::TextTokenizer;
use crate::stats::{self, secs, Usage};
use anyhow::{bail, Context, Result};
use candle_core::Tensor;
use std::path::PathBuf;
use std::time::Instant;

/// Prompt tokens per forward pass, as the engine's worker feeds them, so the bench's prefill
/// is the app's prefill.
const PREFILL_CHUNK: usize = 256;
/// Runs measured and thrown away before the ones reported.
pub const WARMUP_RUNS: usize = 1;

#[derive(Debug, Clone)]
pub struct MeasureOptions {
    pub path: PathBuf,
    pub runs: usize,
    pub prompt_tokens: Vec<usize>,
    pub gen_tokens: usize,
    /// KV-cache size asked for; raised to what the prompts need, capped at the model's.
    pub context_size: usize,
}

/// Token ids that do not change between runs: tokenized once, outside the timings.
struct Prompts {
    /// Some for shape-only files (fixed ids); None when the real chat prompt is timed.
    chat_ids: Option<Vec<u32>>,
    passages: Vec<Vec<u32>>,
}

/// Measures the model at `path` with the threads this process computes with.
pub fn measure(opts: &MeasureOptions) -> Result<ModelReport> {
    let header = GgufHeader::read(&opts.path)?;
    let config =
        ModelConfig::from_header(&header).with_context(|| format!("{}", opts.path.display()))?;
    let shape_only = header.get_str("tokenizer.ggml.model") == Some("no_vocab");
    let longest_prompt = opts.prompt_tokens.iter().copied().max().unwrap_or(0);
    let (prompts, chat_len) = if shape_only {
        let passages = opts
            .prompt_tokens
            .iter()
            .map(|&n| prompt::synthetic_ids(n, config.vocab_size))
            .collect();
        let chat = prompt::synthetic_ids(SHAPE_ONLY_CHAT_TOKENS, config.vocab_size);
        let prompts = Prompts {
            chat_ids: Some(chat),
            passages,
        };
        (prompts, SHAPE_ONLY_CHAT_TOKENS)
    } else {
        let text = text_side(&header)?;
        let passages = opts
            .prompt_tokens
            .iter()
            .map(|&n| text.passage_prompt(n))
            .collect::<Result<_>>()?;
        let prompts = Prompts {
            chat_ids: None,
            passages,
        };
        (prompts, text.chat_prompt()?.len())
    };
    let needed = longest_prompt.max(chat_len + opts.gen_tokens);
    if needed > config.context_length {
        bail!(
            "{}: the bench needs {needed} positions of context, more than the model's {}",
            opts.path.display(),
            config.context_length
        );
    }
    let context_size = opts.context_size.max(needed);
    drop(header);

    let mut runs = Vec::with_capacity(opts.runs);
    let mut ttft_prompt_tokens = 0;
    for i in 0..WARMUP_RUNS + opts.runs {
        let (figures, chat_tokens) = one_run(opts, &prompts, shape_only, context_size)?;
        ttft_prompt_tokens = chat_tokens;
        if i >= WARMUP_RUNS {
            runs.push(figures);
        }
    }
    let header = GgufHeader::read(&opts.path)?;
    Ok(ModelReport {
        path: opts.path.display().to_string(),
        name: header.get_str("general.name").map(str::to_string),
        shape_only,
        architecture: config.arch_name.clone(),
        quantization: header.quantization(),
        parameters: header.parameter_count(),
        file_size_bytes: header.file_size,
        threads: crate::engine::compute_threads(),
        context_size: model::effective_context(context_size, &config),
        ttft_prompt_tokens,
        warmup_runs: WARMUP_RUNS,
        runs,
    })
}

fn text_side(header: &GgufHeader) -> Result<TextSide> {
    let path = header.path.display().to_string();
    let tokenizer =
        TextTokenizer::from_gguf(header).with_context(|| format!("{path}: tokenizer"))?;
    let has_token = |t: &str| tokenizer.token_to_id(t).is_some();
    let template = ChatTemplate::for_model(header, None, &has_token)
        .with_context(|| format!("{path}: chat template"))?;
    Ok(TextSide {
        tokenizer,
        template,
    })
}

/// One cold start, chat turn, decode run and prefill sweep; returns the figures and the
/// length of the TTFT prompt.
fn one_run(
    opts: &MeasureOptions,
    prompts: &Prompts,
    shape_only: bool,
    context_size: usize,
) -> Result<(RunFigures, usize)> {
    // The previous run's model is gone; its peak must not count against this one.
    stats::reset_peak_rss();
    let started = Instant::now();
    let header = GgufHeader::read(&opts.path)?;
    // As the app loads: the tokenizer on its own thread while the weights load.
    let (text, model) = model::load_beside(&header, context_size, || {
        (!shape_only).then(|| text_side(&header)).transpose()
    });
    let (text, mut model) = (text?, model?);
    let load_s = secs(started.elapsed());

    // Time to first token: template, tokenize, prefill and the first (greedy) sample.
    model.truncate_cache(0);
    let asked = Instant::now();
    let chat = match (&prompts.chat_ids, &text) {
        (Some(ids), _) => ids.clone(),
        (None, Some(text)) => text.chat_prompt()?,
        (None, None) => bail!("no chat prompt"),
    };
    let logits = prefill(model.as_mut(), &chat)?;
    let mut token = argmax(&logits)?;
    let first_token_at = Instant::now();
    let mut usage = Usage {
        prompt_tokens: chat.len(),
        ttft_s: secs(first_token_at - asked),
        generated_tokens: 1,
        ..Usage::default()
    };

    // Greedy decoding from there; end-of-turn tokens do not stop it.
    let mut steps = Vec::with_capacity(opts.gen_tokens);
    while usage.generated_tokens < opts.gen_tokens {
        let step = Instant::now();
        let logits = model.forward(&[token], false)?;
        token = argmax(&logits)?;
        steps.push(secs(step.elapsed()));
        usage.generated_tokens += 1;
    }
    usage.decode_s = steps.iter().sum();
    let (first_quarter, last_quarter) = quarter_rates(&steps);

    let mut prefill_figures = Vec::with_capacity(opts.prompt_tokens.len());
    for ids in &prompts.passages {
        model.truncate_cache(0);
        let t = Instant::now();
        let logits = prefill(model.as_mut(), ids)?;
        argmax(&logits)?;
        let run = Usage {
            prompt_tokens: ids.len(),
            prefill_s: secs(t.elapsed()),
            ..Usage::default()
        };
        prefill_figures.push(PrefillFigure {
            prompt_tokens: ids.len(),
            tok_s: run.prefill_tok_s(),
        });
    }
    let peak_rss_bytes = stats::peak_rss_bytes().unwrap_or(0);
    drop(model);
    let figures = RunFigures {
        load_s,
        ttft_ms: usage.ttft_s * 1000.0,
        prefill: prefill_figures,
        decode_tok_s: usage.decode_tok_s(),
        decode_tok_s_first_quarter: first_quarter,
        decode_tok_s_last_quarter: last_quarter,
        generated_tokens: usage.generated_tokens,
        peak_rss_bytes,
    };
    Ok((figures, chat.len()))
}

/// Feeds `ids` after the cached positions in the engine's chunks; the last token's logits.
fn prefill(model: &mut dyn LanguageModel, ids: &[u32]) -> Result<Tensor> {
    let mut logits = None;
    for chunk in ids.chunks(PREFILL_CHUNK) {
        logits = Some(model.forward(chunk, false)?);
    }
    logits.context("empty prompt")
}

/// The greedy choice. Non-finite logits mean a broken model or file: an error, not a figure.
fn argmax(logits: &Tensor) -> Result<u32> {
    let values: Vec<f32> = logits.flatten_all()?.to_vec1()?;
    let mut best = (0usize, f32::NEG_INFINITY);
    for (i, &v) in values.iter().enumerate() {
        if !v.is_finite() {
            bail!("the model produced a non-finite logit ({v}) for token {i}");
        }
        if v > best.1 {
            best = (i, v);
        }
    }
    Ok(best.0 as u32)
}
