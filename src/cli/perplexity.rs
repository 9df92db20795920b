//! `taper perplexity`: a model's perplexity over a text file as llama.cpp's llama-perplexity
//! computes it, and KL divergence against a base file of llama.cpp's format. Progress and the
//! running estimate go to stderr, the result to stdout.

use super::{CacheTypeArg, ModelArgs, RepackCacheArg, ThreadsArg};
use crate::config::Config;
use crate::engine::generation::Generator;
use crate::engine::gguf::GgufHeader;
use crate::engine::loader::{self, OpenOptions};
use crate::engine::model::{CacheOptions, ModelConfig};
use crate::engine::prefix_cache::PrefixCache;
use crate::models::resolve;
use crate::perplexity::kld_file::{BaseReader, BaseShape, BaseWriter};
use crate::perplexity::report::{self, RunFacts};
use crate::perplexity::{evaluate, Scoring, Windows, DEFAULT_CTX};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Debug, Args)]
pub struct PerplexityArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The text to score: a UTF-8 file of at least two windows of tokens.
    pub file: PathBuf,
    /// Tokens per window; the second half of each is scored [default: 512, or the base file's].
    #[arg(short = 'c', long = "ctx-size", value_name = "N")]
    pub ctx_size: Option<usize>,
    /// Score at most N windows [default: every whole window of the text].
    #[arg(long, value_name = "N")]
    pub chunks: Option<usize>,
    #[command(flatten)]
    pub cache_type: CacheTypeArg,
    #[command(flatten)]
    pub threads: ThreadsArg,
    #[command(flatten)]
    pub repack_cache: RepackCacheArg,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// A base file of log-probabilities (llama.cpp's format): written, or read with
    /// --kl-divergence.
    #[arg(long = "kl-divergence-base", value_name = "FILE")]
    pub kl_divergence_base: Option<PathBuf>,
    /// Compare with the base file: KL divergence, same top token, Δp of the correct token.
    #[arg(long = "kl-divergence", requires = "kl_divergence_base")]
    pub kl_divergence: bool,
}

pub(super) fn perplexity(args: PerplexityArgs, config: &Config) -> Result<()> {
    args.threads.apply(config)?;
    args.repack_cache.apply(config);
    let (model_path, user_model) = resolve(args.model.model.as_deref(), config)?;
    let text = read_text(&args.file)?;
    let header = GgufHeader::read(&model_path)?;
    let model_config =
        ModelConfig::from_header(&header).with_context(|| format!("{}", model_path.display()))?;
    let vocab = model_config.vocab_size;
    let base = match (&args.kl_divergence_base, args.kl_divergence) {
        (Some(path), true) => Some(BaseReader::open(path, vocab)?),
        _ => None,
    };
    let n_ctx = window_size(args.ctx_size, base.as_ref())?;
    if n_ctx > model_config.context_length {
        bail!(
            "--ctx-size {n_ctx} is more than the model's context ({})",
            model_config.context_length
        );
    }
    let started = Instant::now();
    let tokenizer_json = args
        .model
        .tokenizer
        .clone()
        .or_else(|| user_model.and_then(|m| m.tokenizer));
    let open = OpenOptions {
        tokenizer_json,
        ..OpenOptions::new(CacheOptions {
            context: n_ctx,
            cache_type: args.cache_type.resolve(config),
        })
    };
    let (mut model, mut model_text) = loader::open(&model_path, &open)?.into_text()?;
    model_text.tokenizer.read_specials_as_text();
    let tokens = model_text.raw_ids(&text)?;
    let windows = match &base {
        Some(base) => base_windows(base, &tokens, args.chunks, &args.file)?,
        None => Windows::plan(tokens.len(), n_ctx, args.chunks)?,
    };
    let tokenizer = &model_text.tokenizer;
    let bos = tokenizer.add_bos().then(|| tokenizer.bos_id()).flatten();
    let mut scoring = scoring_for(&args, base, windows, vocab, &tokens)?;
    let mut cache = PrefixCache::default();
    let mut generator = Generator {
        model: model.as_mut(),
        cache: &mut cache,
        tokenizer: Some(tokenizer),
    };
    let mut progress = Progress::new(windows, tokens.len())?;
    evaluate(
        &mut generator,
        &tokens,
        windows,
        bos,
        &mut scoring,
        &mut |done, s| progress.update(done, s),
    )?;
    progress.finish();
    let summary = scoring.finish()?;
    if args.json {
        let facts = RunFacts {
            model: model_path.display().to_string(),
            text: args.file.display().to_string(),
            ctx_size: n_ctx,
            windows: windows.n_chunk,
            text_tokens: tokens.len(),
            threads: crate::engine::compute_threads(),
            seconds: started.elapsed().as_secs_f64(),
            base_written: base_path(&args, false),
            base_read: base_path(&args, true),
        };
        println!("{}", report::json(&summary, &facts));
    } else {
        print!("{}", report::text(&summary));
    }
    Ok(())
}

/// Plain perplexity, or also writing the base file, or comparing with the one read.
fn scoring_for(
    args: &PerplexityArgs,
    base: Option<BaseReader>,
    windows: Windows,
    vocab: usize,
    tokens: &[u32],
) -> Result<Scoring> {
    Ok(match (base, &args.kl_divergence_base) {
        (Some(reader), _) => Scoring::kld(reader),
        (None, Some(path)) => {
            let shape = BaseShape {
                n_ctx: windows.n_ctx,
                n_vocab: vocab,
                n_chunk: windows.n_chunk,
            };
            Scoring::write_base(BaseWriter::create(path, &shape, tokens)?)
        }
        (None, None) => Scoring::perplexity(),
    })
}

/// The base file's path when it was read (`read`) or written (`!read`).
fn base_path(args: &PerplexityArgs, read: bool) -> Option<String> {
    let path = args.kl_divergence_base.as_ref()?;
    (args.kl_divergence == read).then(|| path.display().to_string())
}

/// The text file, refused with a sentence when it is missing, empty or not text; one final
/// newline dropped.
fn read_text(path: &Path) -> Result<String> {
    let shown = path.display();
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {shown}"))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        bail!("{shown} is empty: there is no text to score");
    }
    if bytes.contains(&0) {
        bail!("{shown} is not a text file (it holds binary data)");
    }
    let mut text = String::from_utf8(bytes)
        .map_err(|_| anyhow!("{shown} is not a text file (it is not UTF-8)"))?;
    // llama-perplexity drops one final newline of the file it reads; so do we, for the same
    // tokens.
    if text.ends_with('\n') {
        text.pop();
    }
    Ok(text)
}

/// The window: the base file's when one is read (a different --ctx-size is an error), else
/// the flag's or the default.
fn window_size(flag: Option<usize>, base: Option<&BaseReader>) -> Result<usize> {
    match (flag, base) {
        (Some(n), Some(b)) if n != b.shape.n_ctx => bail!(
            "the base file was computed with --ctx-size {}, not {n}: leave --ctx-size out",
            b.shape.n_ctx
        ),
        (_, Some(b)) => Ok(b.shape.n_ctx),
        (n, None) => Ok(n.unwrap_or(DEFAULT_CTX)),
    }
}

/// The base file's windows (at most `chunks`), after checking that the text gives the same
/// tokens the base was computed on.
fn base_windows(
    base: &BaseReader,
    tokens: &[u32],
    chunks: Option<usize>,
    text: &Path,
) -> Result<Windows> {
    let shape = &base.shape;
    let n_chunk = chunks.map_or(shape.n_chunk, |c| c.min(shape.n_chunk));
    if n_chunk == 0 {
        bail!("--chunks must be at least 1");
    }
    let n = n_chunk * shape.n_ctx;
    if tokens.len() < n {
        bail!(
            "the base file covers {n} tokens, but {} gives only {} with this model",
            text.display(),
            tokens.len()
        );
    }
    if let Some(i) = (0..n).find(|&i| tokens[i] != base.tokens[i]) {
        bail!(
            "the base file was computed on other tokens than {} gives with this model's \
             tokenizer (they differ at token {i}): another text, or another model family",
            text.display()
        );
    }
    Ok(Windows {
        n_ctx: shape.n_ctx,
        n_chunk,
    })
}

/// A bar with ETA and the running estimate when stderr is a terminal, a line per window
/// otherwise (logs, tests).
struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    started: Instant,
}

impl Progress {
    fn new(windows: Windows, tokens: usize) -> Result<Self> {
        let total = windows.n_chunk;
        eprintln!(
            "taper perplexity: {tokens} tokens, {total} window{} of {}, {} positions scored",
            if total == 1 { "" } else { "s" },
            windows.n_ctx,
            windows.scored()
        );
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            let style = ProgressStyle::with_template(
                "[{bar:30}] {pos}/{len} windows, {elapsed} ETA {eta}  {msg}",
            )
            .map_err(|e| anyhow!("progress bar: {e}"))?
            .progress_chars("=> ");
            bar.set_style(style);
            Some(bar)
        } else {
            None
        };
        Ok(Self {
            bar,
            total,
            started: Instant::now(),
        })
    }

    fn update(&mut self, done: usize, scoring: &Scoring) {
        let (what, est) = scoring.running();
        let estimate = format!("{what} = {:.4} +/- {:.5}", est.value, est.error);
        match &self.bar {
            Some(bar) => {
                bar.set_position(done as u64);
                bar.set_message(estimate);
            }
            None => eprintln!(
                "[{done}/{}] {estimate} ({:.1} s)",
                self.total,
                self.started.elapsed().as_secs_f64()
            ),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
