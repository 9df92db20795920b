//! `taper bench`: its flags, and turning them into the bench module's options.

use super::{CacheTypeArg, RepackCacheArg, SpeculativeArg};
use crate::bench;
use crate::config::Config;
use crate::engine::threads::set_threads;
use crate::models::resolve;
use crate::protocol::Speculation;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A model to measure: a .gguf path, a model name or a downloaded catalogue entry.
    /// Repeat to compare models in one run.
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// Measure a catalogue entry you do not have (e.g. qwen3-4b): a temporary GGUF with random
    /// weights and exactly that model's shape and quantization. Results are marked shape-only.
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Prompt lengths whose prefill speed is measured.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "128,512",
        value_name = "N,N"
    )]
    pub prompt_tokens: Vec<usize>,
    /// Greedy tokens generated for the decode speed.
    #[arg(long, default_value_t = 128, value_name = "N")]
    pub gen_tokens: usize,
    /// Measured runs per model, after one warm-up; figures are medians with min–max.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub runs: usize,
    /// Skip the warm-up run (as llama-bench's --no-warmup): for a depth so long that one run
    /// takes many minutes. The first run's cold start may then include reading the file.
    #[arg(long)]
    pub no_warmup: bool,
    /// Compute threads; a list (1,2,4) measures each [default: the config's, else the engine's].
    #[arg(long, value_delimiter = ',', value_name = "N,N")]
    pub threads: Vec<usize>,
    /// KV-cache size in tokens (raised to what the prompts need) [default: 4096].
    #[arg(long = "ctx-size")]
    pub ctx_size: Option<usize>,
    #[command(flatten)]
    pub cache_type: CacheTypeArg,
    /// Measure loads that repack (the warm-up, otherwise, writes the repack cache and the
    /// measured runs read it back).
    #[command(flatten)]
    pub repack_cache: RepackCacheArg,
    /// Depths measured far into a context: a prefill of N tokens and the decode speed right
    /// after it (N tokens in), as llama-bench's -p N and -gp N,gen.
    #[arg(long, value_delimiter = ',', value_name = "N,N")]
    pub depth: Vec<usize>,
    /// Print a JSON array: one record per model and thread count.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print a Markdown section (machine, settings, table), as in the README.
    #[arg(long)]
    pub markdown: bool,
    /// Keep the shape-only GGUF here (a directory with several --shape), e.g. to compare with
    /// llama.cpp's llama-bench.
    #[arg(long, value_name = "PATH")]
    pub keep_shape_file: Option<PathBuf>,
    /// Hold the decode to the JSON Schema in FILE and report what the grammar costs per token.
    #[arg(long = "json-schema", value_name = "FILE")]
    pub json_schema: Option<PathBuf>,
    // ngram or draft: decode with drafts measured beside plain decode (the chat, a code
    // rewrite and a quote with corrections) and the cost of verify passes; off: not measured.
    #[command(flatten)]
    pub speculative: SpeculativeArg,
    /// Internal: measure the one model given with -m in this process, print a JSON report.
    #[arg(long, hide = true)]
    pub measure_one: bool,
}

pub(super) fn bench(args: BenchArgs, config: &Config) -> Result<()> {
    let mut targets = Vec::new();
    for arg in &args.models {
        targets.push(bench_target(arg, &args.speculative, config)?);
    }
    for name in &args.shapes {
        targets.push(bench::Target::Shape(crate::catalog::lookup(name)?));
    }
    if targets.is_empty() {
        let (path, _) = resolve(None, config)?;
        targets.push(bench::Target::File {
            name: file_label(&path),
            draft: bench_draft(&path, &args.speculative, config)?,
            path,
        });
    }
    let threads = if args.threads.is_empty() {
        vec![config.threads]
    } else {
        args.threads.iter().map(|&n| Some(n)).collect()
    };
    let format = if args.json {
        bench::Format::Json
    } else if args.markdown {
        bench::Format::Markdown
    } else {
        bench::Format::Table
    };
    let prompt_tokens = unique(&args.prompt_tokens);
    bench::run(&bench::BenchOptions {
        targets,
        threads,
        runs: args.runs,
        prompt_tokens,
        gen_tokens: args.gen_tokens,
        context_size: args.ctx_size.unwrap_or(config.context_size()),
        cache_type: args.cache_type.resolve(config),
        depths: unique(&args.depth),
        format,
        warmup_runs: warmup_runs(&args),
        keep_shape_file: args.keep_shape_file,
        repack_cache: args.repack_cache.dir(config).is_some(),
        json_schema: args.json_schema,
        speculation: args.speculative.resolve(config),
    })
}

/// A `-m` argument for the bench: a file or model name, or a downloaded catalogue entry.
fn bench_target(arg: &str, speculative: &SpeculativeArg, config: &Config) -> Result<bench::Target> {
    let entry = crate::catalog::find(arg);
    match resolve(Some(arg), config) {
        Ok((path, _)) => {
            let name = match entry {
                Some(entry) if !std::path::Path::new(arg).is_file() => entry.name.clone(),
                _ => file_label(&path),
            };
            Ok(bench::Target::File {
                name,
                draft: bench_draft(&path, speculative, config)?,
                path,
            })
        }
        // A catalogue model that is not downloaded can still be measured by its shape.
        Err(e) => match entry {
            Some(entry) if entry.supported => Err(anyhow!(
                "{e:#}; or measure a file of its shape without the download: \
                 `taper bench --shape {}`",
                entry.name
            )),
            _ => Err(e),
        },
    }
}

/// The draft model of the model at `path`, when the bench measures drafting with one.
fn bench_draft(
    path: &std::path::Path,
    speculative: &SpeculativeArg,
    config: &Config,
) -> Result<Option<PathBuf>> {
    match speculative.resolve(config) {
        Speculation::Draft => speculative.required_draft(path, config),
        Speculation::Off | Speculation::Ngram => Ok(None),
    }
}

fn file_label(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The hidden child of `taper bench`: one model (a path), one thread count.
pub(super) fn bench_measure_one(args: &BenchArgs) -> Result<()> {
    if args.threads.len() > 1 {
        bail!("--measure-one takes one thread count");
    }
    // Before any candle work: the thread pools read these once.
    set_threads(args.threads.first().copied())?;
    // The parent turned the config's setting into the flag.
    let repack_cache = (!args.repack_cache.no_repack_cache).then(crate::paths::repack_cache_dir);
    crate::engine::model::weights::packed_cache::configure(repack_cache);
    let [path] = args.models.as_slice() else {
        bail!("--measure-one takes exactly one -m PATH");
    };
    bench::measure_one(&bench::measure::MeasureOptions {
        path: PathBuf::from(path),
        runs: args.runs.max(1),
        prompt_tokens: args.prompt_tokens.clone(),
        gen_tokens: args.gen_tokens,
        context_size: args.ctx_size.unwrap_or(crate::config::DEFAULT_CONTEXT_SIZE),
        cache_type: args.cache_type.cache_type.unwrap_or_default(),
        depths: args.depth.clone(),
        warmup_runs: warmup_runs(args),
        json_schema: match &args.json_schema {
            Some(path) => Some(read_schema(path)?),
            None => None,
        },
        // The parent always says.
        speculation: args.speculative.given().unwrap_or_default(),
        draft_model: args
            .speculative
            .speculative
            .as_ref()
            .and_then(|c| c.draft.as_ref())
            .map(PathBuf::from),
    })
}

/// The JSON Schema in `path`.
fn read_schema(path: &std::path::Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the JSON schema {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

fn warmup_runs(args: &BenchArgs) -> usize {
    if args.no_warmup {
        0
    } else {
        bench::measure::WARMUP_RUNS
    }
}

/// Each value once, in the order given.
fn unique(values: &[usize]) -> Vec<usize> {
    let mut seen = std::collections::HashSet::new();
    values.iter().copied().filter(|n| seen.insert(*n)).collect()
}
