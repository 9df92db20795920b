//! The measuring side: one model, one thread count, in a process of its own.
//!
//! Each run starts from nothing (the previous run's model released): read the header, build
//! the tokenizer and chat template, load the weights (cold start); then a short chat turn on a
//! fresh cache (template, tokenize, prefill, first sample: time to first token) and greedy
//! decoding from there, every step timed and end-of-turn tokens ignored; then a prefill of
//! exactly N tokens of the passage on a fresh cache for every `--prompt-tokens` N. One
//! warm-up run is discarded (none with `--no-warmup`). Rates are `crate::stats`' definitions,
//! the ones the TUI shows.
//!
//! The cold start is the process's: after the warm-up the file is in the OS page cache, so it
//! measures parsing, tokenizer and template building and copying the weights, not the disk.
//! Without a warm-up the first run's cold start may include reading the file.
//! Peak memory is reset (Linux) before each run, so a run's peak is its own model's.

use super::prompt::{self, SHAPE_ONLY_CHAT_TOKENS};
use super::speculation;
use super::summary::{quarter_rates, DepthFigure, ModelReport, PrefillFigure, RunFigures};
use crate::engine::generation::{Generator, TurnOptions, Unobserved};
use crate::engine::gguf::GgufHeader;
use crate::engine::loader::{self, OpenOptions};
use crate::engine::model::weights::packed_cache;
use crate::engine::model::{self, CacheOptions, ModelConfig};
use crate::engine::prefix_cache::PrefixCache;
use crate::engine::prompt::ModelText;
use crate::engine::speculative::{draft_model, SharedDraft};
use crate::protocol::TurnObserver;
use crate::protocol::Usage;
use crate::protocol::{CacheType, Constraint};
use crate::protocol::{SamplingParams, Speculation};
use crate::stats::{self, secs};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::time::Instant;
/// Runs measured and thrown away before the ones reported, unless `--no-warmup`.
pub const WARMUP_RUNS: usize = 1;

#[derive(Debug, Clone)]
pub struct MeasureOptions {
    pub path: PathBuf,
    pub runs: usize,
    pub prompt_tokens: Vec<usize>,
    pub gen_tokens: usize,
    /// KV-cache size asked for; raised to what the prompts need, capped at the model's.
    pub context_size: usize,
    pub cache_type: CacheType,
    /// Depths at which prefill and the decode after it are measured too.
    pub depths: Vec<usize>,
    /// Runs thrown away first: [`WARMUP_RUNS`], or 0 with `--no-warmup`.
    pub warmup_runs: usize,
    /// Decode held to this JSON Schema (`--json-schema`): what the grammar costs per token.
    pub json_schema: Option<serde_json::Value>,
    /// With `ngram` or `draft`, speculative decoding is measured beside plain decode
    /// ([`super::speculation`]).
    pub speculation: Speculation,
    /// The draft model `draft` drafts with.
    pub draft_model: Option<PathBuf>,
}

/// Token ids that do not change between runs: tokenized once, outside the timings.
struct Prompts {
    /// Some for shape-only files (fixed ids); None when the real chat prompt is timed.
    chat_ids: Option<Vec<u32>>,
    passages: Vec<Vec<u32>>,
    /// One per `--depth`, exactly that long.
    depths: Vec<Vec<u32>>,
    /// The repetitive workloads' prompts (models with a vocabulary).
    repetitive: Option<speculation::RepetitivePrompts>,
    /// The draft model, when drafts come from one.
    draft: Option<SharedDraft>,
}

/// Measures the model at `path` with the threads this process computes with.
pub fn measure(opts: &MeasureOptions) -> Result<ModelReport> {
    let header = GgufHeader::read(&opts.path)?;
    let config =
        ModelConfig::from_header(&header).with_context(|| format!("{}", opts.path.display()))?;
    let shape_only = header.get_str("tokenizer.ggml.model") == Some("no_vocab");
    let longest_prompt = opts.prompt_tokens.iter().copied().max().unwrap_or(0);
    let deepest = opts.depths.iter().copied().max().unwrap_or(0);
    // The tokenizer a draft model must share (models with a vocabulary).
    let mut target_text = None;
    let (mut prompts, chat_len) = if shape_only {
        let ids = |lengths: &[usize]| {
            lengths
                .iter()
                .map(|&n| prompt::synthetic_ids(n, config.vocab_size))
                .collect()
        };
        let chat = prompt::synthetic_ids(SHAPE_ONLY_CHAT_TOKENS, config.vocab_size);
        let prompts = Prompts {
            chat_ids: Some(chat),
            passages: ids(&opts.prompt_tokens),
            depths: ids(&opts.depths),
            repetitive: None,
            draft: None,
        };
        (prompts, SHAPE_ONLY_CHAT_TOKENS)
    } else {
        let text = ModelText::load(&header, None, None)?;
        let passages = |lengths: &[usize]| {
            lengths
                .iter()
                .map(|&n| prompt::passage_prompt(&text, n))
                .collect::<Result<_>>()
        };
        let prompts = Prompts {
            chat_ids: None,
            passages: passages(&opts.prompt_tokens)?,
            depths: passages(&opts.depths)?,
            repetitive: match opts.speculation {
                Speculation::Ngram | Speculation::Draft => {
                    Some(speculation::RepetitivePrompts::new(&text)?)
                }
                Speculation::Off => None,
            },
            draft: None,
        };
        let chat_len = prompt::chat_prompt(&text)?.len();
        target_text = Some(text);
        (prompts, chat_len)
    };
    let repetitive_needs = prompts
        .repetitive
        .as_ref()
        .map_or(0, |r| r.context_needed());
    let needed = longest_prompt
        .max(chat_len + opts.gen_tokens)
        .max(deepest + opts.gen_tokens)
        .max(repetitive_needs);
    if needed > config.context_length {
        bail!(
            "{}: the bench needs {needed} positions of context, more than the model's {}",
            opts.path.display(),
            config.context_length
        );
    }
    let context_size = opts.context_size.max(needed);
    drop(header);
    if let (Speculation::Draft, Some(path), Some(text)) =
        (opts.speculation, &opts.draft_model, &target_text)
    {
        let cache = CacheOptions {
            context: context_size,
            cache_type: opts.cache_type,
        };
        prompts.draft = Some(draft_model::open(path, text, cache)?);
    }

    let mut runs = Vec::with_capacity(opts.runs);
    let mut ttft_prompt_tokens = 0;
    for i in 0..opts.warmup_runs + opts.runs {
        let (figures, chat_tokens) = one_run(opts, &prompts, shape_only, context_size)?;
        ttft_prompt_tokens = chat_tokens;
        if i >= opts.warmup_runs {
            runs.push(figures);
        }
        // The warm-up's load wrote the repack cache in the background: the measured loads
        // read it back, as every load after a model's first does.
        packed_cache::finish_writes();
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
        kernels: model::kernel_path::name().to_string(),
        context_size: model::effective_context(context_size, &config),
        cache_type: opts.cache_type,
        ttft_prompt_tokens,
        warmup_runs: opts.warmup_runs,
        runs,
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
    // As the app loads: the tokenizer on its own thread while the weights load.
    let open = OpenOptions {
        text: !shape_only,
        ..OpenOptions::new(model::CacheOptions {
            context: context_size,
            cache_type: opts.cache_type,
        })
    };
    let loaded = loader::open(&opts.path, &open)?;
    let load_s = loaded.info.load_s;
    let (text, mut model) = (loaded.text, loaded.model);
    let mut cache = PrefixCache::default();
    let mut generator = Generator {
        model: model.as_mut(),
        cache: &mut cache,
        tokenizer: text.as_ref().map(|t| &t.tokenizer),
    };

    // A model's grammar compiler is built once (a server at start); each answer's schema is
    // compiled within its time to first token.
    if let (Some(_), Some(text)) = (&opts.json_schema, &text) {
        text.grammars()?;
    }
    // Time to first token (template, tokenize, prefill and the first greedy sample), then
    // greedy decoding from there with end-of-turn tokens ignored, every step timed.
    let asked = Instant::now();
    let chat = match (&prompts.chat_ids, &text) {
        (Some(ids), _) => ids.clone(),
        (None, Some(text)) => prompt::chat_prompt(text)?,
        (None, None) => bail!("no chat prompt"),
    };
    let options = TurnOptions {
        sampling: SamplingParams::greedy(),
        max_tokens: opts.gen_tokens.max(1),
        stop_at_end_of_turn: false,
    };
    let mut clock = StepClock::default();
    let (grammar, options) = match (&opts.json_schema, &text) {
        (None, _) => (None, options),
        (Some(schema), Some(text)) => {
            let constraint = Constraint::JsonSchema(schema.clone());
            let grammar = text.grammars()?.start(&constraint)?;
            // Held to a grammar, the answer ends where the grammar does.
            let options = TurnOptions {
                stop_at_end_of_turn: true,
                ..options
            };
            (Some(grammar), options)
        }
        (Some(_), None) => bail!("--json-schema needs a model with a vocabulary, not a shape"),
    };
    let usage = generator
        .run_held(&chat, &options, grammar, asked, &mut clock)?
        .usage;
    let grammar_ms_per_token = opts
        .json_schema
        .is_some()
        .then(|| 1000.0 * usage.grammar_s / usage.generated_tokens.max(1) as f64);
    let (first_quarter, last_quarter) = quarter_rates(&clock.steps);
    let decode_tok_s = stats::steps_tok_s(&clock.steps);
    // Beside plain decode, never instead of it: the figures above stay comparable.
    let drafts = match (opts.speculation, &prompts.draft) {
        (Speculation::Draft, Some(draft)) => speculation::Drafts::Model(draft.clone()),
        _ => speculation::Drafts::Lookup,
    };
    let speculation = match (opts.speculation, &opts.json_schema) {
        (Speculation::Ngram | Speculation::Draft, None) => Some(speculation::measure(
            &mut generator,
            &chat,
            &options,
            decode_tok_s,
            prompts.repetitive.as_ref(),
            &drafts,
        )?),
        _ => None,
    };

    let mut prefill_figures = Vec::with_capacity(opts.prompt_tokens.len());
    for ids in &prompts.passages {
        let t = Instant::now();
        generator
            .prefill_fresh(ids, &mut Unobserved)?
            .context("the prefill stopped")?;
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
    let depths = prompts
        .depths
        .iter()
        .map(|ids| at_depth(&mut generator, ids, &options))
        .collect::<Result<_>>()?;
    let peak_rss_bytes = stats::peak_rss_bytes().unwrap_or(0);
    drop(model);
    let figures = RunFigures {
        load_s,
        ttft_ms: usage.ttft_s * 1000.0,
        prefill: prefill_figures,
        decode_tok_s,
        decode_tok_s_first_quarter: first_quarter,
        decode_tok_s_last_quarter: last_quarter,
        generated_tokens: usage.generated_tokens,
        grammar_ms_per_token,
        speculation,
        depths,
        peak_rss_bytes,
    };
    Ok((figures, chat.len()))
}

/// Prefill of `ids` on an empty cache, then greedy decoding right after it.
fn at_depth(generator: &mut Generator, ids: &[u32], options: &TurnOptions) -> Result<DepthFigure> {
    generator.model.truncate_cache(0);
    generator.cache.clear();
    let mut clock = StepClock::default();
    let usage = generator
        .run(ids, options, Instant::now(), &mut clock)?
        .usage;
    Ok(DepthFigure {
        depth: ids.len(),
        prefill_tok_s: usage.prefill_tok_s(),
        decode_tok_s: stats::steps_tok_s(&clock.steps),
    })
}

/// The time of every decode step: from one sampled token to the next (a forward pass and a
/// sample each).
#[derive(Default)]
pub(super) struct StepClock {
    last: Option<Instant>,
    pub steps: Vec<f64>,
}

impl TurnObserver for StepClock {
    fn token(&mut self, _id: u32) {
        let now = Instant::now();
        if let Some(last) = self.last.replace(now) {
            self.steps.push(secs(now - last));
        }
    }
}
