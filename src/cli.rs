//! The command-line entry points: `taper` / `taper chat` (the TUI), `taper ask`,
//! `taper tokenize` and `taper bench`.

use crate::bench;
use crate::chat::Message;
use crate::config::{Config, UserModel};
use crate::engine::gguf::GgufHeader;
use crate::engine::sampler::SamplingParams;
use crate::engine::tokenizer::TextTokenizer;
use crate::engine::{EngineCommand, EngineEvent, EngineHandle, GenerateRequest, LoadRequest};
use crate::paths;
use crate::stats::{self, human_bytes, Usage};
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use std::io::{Read, Write};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "taper",
    version,
    about = "Chat with small language models on the CPU"
)]
pub struct Cli {
    /// Read settings from this file instead of the config directory's config.toml.
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Without a command: the full-screen chat (`taper chat`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The full-screen chat (the default command).
    Chat(crate::tui::ChatArgs),
    /// Stream one answer to stdout.
    Ask(AskArgs),
    /// Print the token ids of TEXT as a JSON array (no BOS added).
    Tokenize(TokenizeArgs),
    /// Measure cold start, time to first token, prefill and decode speed and peak memory.
    Bench(BenchArgs),
    /// The catalogue and the local models; `models pull NAME` downloads one.
    Models(ModelsArgs),
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    pub action: Option<ModelsAction>,
}

#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Download a catalogue model (or a config model with repo and file) into the hub cache.
    Pull { name: String },
}

#[derive(Debug, Args)]
pub struct ModelArgs {
    /// A path to a .gguf file, or the name of one in the models directory.
    #[arg(short, long)]
    pub model: Option<String>,
    /// A tokenizer.json to use instead of the vocabulary inside the GGUF.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
}

/// Sampling flags shared by `ask` and `chat`; an unset one falls back to the config file, then
/// to the built-in default.
#[derive(Debug, Clone, Default, Args)]
pub struct SamplingArgs {
    /// Most tokens in one answer [default: 1024].
    #[arg(short = 'n', long = "max-tokens")]
    pub max_tokens: Option<usize>,
    /// 0 picks the most likely token every time (greedy) [default: 0.7].
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Keep only the K most likely tokens, 0 = off [default: 40].
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Keep the most likely tokens up to this total probability, 1 = off [default: 0.95].
    #[arg(long)]
    pub top_p: Option<f32>,
    /// Drop tokens less likely than this fraction of the best one, 0 = off [default: 0.05].
    #[arg(long)]
    pub min_p: Option<f32>,
    /// Penalise recently seen tokens, 1 = off [default: 1.1].
    #[arg(long)]
    pub repeat_penalty: Option<f32>,
    /// Same seed, same answer.
    #[arg(long)]
    pub seed: Option<u64>,
}

impl SamplingArgs {
    /// Flags over the config over the defaults.
    pub fn params(&self, config: &Config) -> SamplingParams {
        let defaults = config.sampling();
        SamplingParams {
            temperature: self.temperature.unwrap_or(defaults.temperature),
            top_k: self.top_k.unwrap_or(defaults.top_k),
            top_p: self.top_p.unwrap_or(defaults.top_p),
            min_p: self.min_p.unwrap_or(defaults.min_p),
            repeat_penalty: self.repeat_penalty.unwrap_or(defaults.repeat_penalty),
            seed: self.seed.or(defaults.seed),
            ..defaults
        }
    }

    pub fn max_tokens(&self, config: &Config) -> usize {
        self.max_tokens.unwrap_or(config.max_tokens())
    }
}

#[derive(Debug, Args)]
pub struct AskArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// A system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Send the prompt as is, without the chat template (for base models).
    #[arg(long)]
    pub raw: bool,
    /// KV-cache size in tokens, capped at the model's own context [default: 4096].
    #[arg(long = "ctx-size")]
    pub ctx_size: Option<usize>,
    /// Compute threads (default: the physical cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print usage figures to stderr when done.
    #[arg(long)]
    pub stats: bool,
    /// The prompt; none, or "-", reads stdin.
    pub prompt: Option<String>,
}

#[derive(Debug, Args)]
pub struct TokenizeArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    pub text: String,
}

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
    /// Compute threads; a list (1,2,4) measures each [default: the config's, else the engine's].
    #[arg(long, value_delimiter = ',', value_name = "N,N")]
    pub threads: Vec<usize>,
    /// KV-cache size in tokens (raised to what the prompts need) [default: 4096].
    #[arg(long = "ctx-size")]
    pub ctx_size: Option<usize>,
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
    /// Internal: measure the one model given with -m in this process, print a JSON report.
    #[arg(long, hide = true)]
    pub measure_one: bool,
}

pub fn run(cli: Cli) -> Result<()> {
    if let Some(Command::Bench(args)) = &cli.command {
        if args.measure_one {
            // The measuring child: its parent resolved everything and it needs no config.
            return bench_measure_one(args);
        }
    }
    let config = match &cli.config {
        Some(path) => Config::load(path, true)?,
        None => Config::load(&paths::config_file(), false)?,
    };
    match cli.command {
        None => crate::tui::run(Default::default(), &config),
        Some(Command::Chat(args)) => crate::tui::run(args, &config),
        Some(Command::Ask(args)) => ask(args, &config),
        Some(Command::Tokenize(args)) => tokenize(args, &config),
        Some(Command::Bench(args)) => bench(args, &config),
        Some(Command::Models(args)) => models(args, &config),
    }
}

fn models(args: ModelsArgs, config: &Config) -> Result<()> {
    match args.action {
        None => {
            let hub = crate::hub::HubConfig::from_env();
            let local = crate::models::discover(config, &hub);
            print!("{}", crate::models::listing::render(&local, &hub));
        }
        Some(ModelsAction::Pull { name }) => {
            let path = crate::models::pull::pull(&name, config)?;
            println!("{}", path.display());
        }
    }
    Ok(())
}

/// The model file for `-m` (or the config's default model), and the config's extras for it.
pub fn resolve(arg: Option<&str>, config: &Config) -> Result<(PathBuf, Option<UserModel>)> {
    let name = arg.or(config.default_model.as_deref());
    let hub = crate::hub::HubConfig::from_env();
    if let Some(user) = name.and_then(|n| config.user_model(n)) {
        let path = match (&user.path, &user.repo, &user.file) {
            (Some(path), _, _) => paths::expand_home(path),
            (None, Some(repo), Some(file)) => crate::hub::HubFile::new(repo, file)
                .cached(&hub)
                .ok_or_else(|| not_downloaded(&user.name))?,
            _ => bail!("model {:?} in the config has no path", user.name),
        };
        return Ok((path, Some(user.clone())));
    }
    let dir = models_dir(config);
    match paths::resolve_model(name, &dir) {
        Ok(path) => Ok((path, None)),
        // Not a file and not in the models directory: perhaps a catalogue name.
        Err(err) => match name.and_then(crate::catalog::find) {
            Some(entry) if !entry.supported => {
                bail!(
                    "{} can't run in taper yet: {}",
                    entry.name,
                    entry.unsupported_reason
                )
            }
            Some(entry) => crate::models::catalog_path(entry, &hub)
                .map(|path| (path, None))
                .ok_or_else(|| not_downloaded(&entry.name)),
            None => Err(err),
        },
    }
}

fn not_downloaded(name: &str) -> anyhow::Error {
    anyhow!(
        "{name} is not downloaded yet: run `taper models pull {name}` (or pass a local .gguf path)"
    )
}

pub fn models_dir(config: &Config) -> PathBuf {
    crate::models::models_dir(config)
}

/// Sets candle's compute threads; must run before the engine computes anything.
pub fn set_threads(threads: Option<usize>) -> Result<()> {
    if let Some(n) = threads {
        if n == 0 {
            bail!("--threads must be at least 1");
        }
        // candle reads these once, when its thread pools start.
        std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    }
    Ok(())
}

fn read_prompt(prompt: Option<String>) -> Result<String> {
    match prompt.as_deref() {
        Some("-") | None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the prompt from stdin")?;
            Ok(text)
        }
        Some(p) => Ok(p.to_string()),
    }
}

fn ask(args: AskArgs, config: &Config) -> Result<()> {
    set_threads(args.threads.or(config.threads))?;
    let (model_path, user_model) = resolve(args.model.model.as_deref(), config)?;
    let prompt = read_prompt(args.prompt)?;
    if prompt.trim().is_empty() {
        bail!("the prompt is empty");
    }
    let mut messages = Vec::new();
    if let Some(system) = args.system.or_else(|| config.system_prompt.clone()) {
        messages.push(Message::system(system));
    }
    messages.push(Message::user(prompt));
    let sampling = args.sampling.params(config);

    let mut engine = EngineHandle::spawn()?;
    engine.send(EngineCommand::Load(LoadRequest {
        model_path,
        tokenizer_json: args
            .model
            .tokenizer
            .or_else(|| user_model.as_ref().and_then(|m| m.tokenizer.clone())),
        context_size: args.ctx_size.unwrap_or(config.context_size()),
        chat_template: user_model.and_then(|m| m.chat_template),
    }))?;
    let info = loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Loaded { info, notices }) => {
                for notice in notices {
                    eprintln!("taper: {notice}");
                }
                break info;
            }
            Some(EngineEvent::Failed { message, .. }) => bail!("{message}"),
            Some(_) => continue,
            None => bail!("the engine stopped while loading"),
        }
    };
    engine.send(EngineCommand::Generate(GenerateRequest {
        turn_id: 1,
        messages,
        raw: args.raw,
        sampling,
        max_tokens: args.sampling.max_tokens(config),
    }))?;
    let mut out = std::io::stdout().lock();
    let usage = loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Token { text, .. }) => {
                out.write_all(text.as_bytes())?;
                out.flush()?;
            }
            Some(EngineEvent::Finished { usage, .. }) => break usage,
            Some(EngineEvent::Failed { message, .. }) => bail!("{message}"),
            Some(_) => continue,
            None => return Err(anyhow!("the engine stopped while generating")),
        }
    };
    writeln!(out)?;
    if usage.dropped_messages > 0 {
        eprintln!(
            "taper: left out the {} oldest messages to fit the context",
            usage.dropped_messages
        );
    }
    if args.stats {
        eprintln!("{}", stats_line(&usage, info.load_s, info.threads));
    }
    Ok(())
}

/// The one-line summary `--stats` prints.
pub fn stats_line(usage: &Usage, load_s: f64, threads: usize) -> String {
    let peak = stats::peak_rss_bytes()
        .map(human_bytes)
        .unwrap_or_else(|| "n/a".into());
    format!(
        "prompt {} tok (cached {}) | prefill {:.1} tok/s | ttft {:.3} s | generated {} tok | \
         decode {:.1} tok/s | load {:.2} s | peak RSS {peak} | threads {threads}",
        usage.prompt_tokens,
        usage.cached_tokens,
        usage.prefill_tok_s(),
        usage.ttft_s,
        usage.generated_tokens,
        usage.decode_tok_s(),
        load_s,
    )
}

fn tokenize(args: TokenizeArgs, config: &Config) -> Result<()> {
    let (path, user_model) = resolve(args.model.model.as_deref(), config)?;
    let header = GgufHeader::read(&path)?;
    let json = args
        .model
        .tokenizer
        .or_else(|| user_model.and_then(|m| m.tokenizer));
    let tokenizer = match &json {
        Some(json) => TextTokenizer::from_tokenizer_json(json, &header),
        None => TextTokenizer::from_gguf(&header),
    }
    .with_context(|| format!("{}: tokenizer", path.display()))?;
    let ids = tokenizer.encode(&args.text)?;
    println!("{}", serde_json::to_string(&ids)?);
    Ok(())
}

fn bench(args: BenchArgs, config: &Config) -> Result<()> {
    let mut targets = Vec::new();
    for arg in &args.models {
        targets.push(bench_target(arg, config)?);
    }
    for name in &args.shapes {
        targets.push(bench::Target::Shape(crate::catalog::lookup(name)?));
    }
    if targets.is_empty() {
        let (path, _) = resolve(None, config)?;
        targets.push(bench::Target::File {
            name: file_label(&path),
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
    // Each length once, in the order given.
    let mut prompt_tokens = args.prompt_tokens.clone();
    let mut seen = std::collections::HashSet::new();
    prompt_tokens.retain(|n| seen.insert(*n));
    bench::run(&bench::BenchOptions {
        targets,
        threads,
        runs: args.runs,
        prompt_tokens,
        gen_tokens: args.gen_tokens,
        context_size: args.ctx_size.unwrap_or(config.context_size()),
        format,
        keep_shape_file: args.keep_shape_file,
    })
}

/// A `-m` argument for the bench: a file or model name, or a downloaded catalogue entry.
fn bench_target(arg: &str, config: &Config) -> Result<bench::Target> {
    let entry = crate::catalog::find(arg);
    match resolve(Some(arg), config) {
        Ok((path, _)) => {
            let name = match entry {
                Some(entry) if !std::path::Path::new(arg).is_file() => entry.name.clone(),
                _ => file_label(&path),
            };
            Ok(bench::Target::File { name, path })
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

fn file_label(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The hidden child of `taper bench`: one model (a path), one thread count.
fn bench_measure_one(args: &BenchArgs) -> Result<()> {
    if args.threads.len() > 1 {
        bail!("--measure-one takes one thread count");
    }
    // Before any candle work: the thread pools read these once.
    set_threads(args.threads.first().copied())?;
    let [path] = args.models.as_slice() else {
        bail!("--measure-one takes exactly one -m PATH");
    };
    bench::measure_one(&bench::measure::MeasureOptions {
        path: PathBuf::from(path),
        runs: args.runs.max(1),
        prompt_tokens: args.prompt_tokens.clone(),
        gen_tokens: args.gen_tokens,
        context_size: args.ctx_size.unwrap_or(crate::config::DEFAULT_CONTEXT_SIZE),
    })
}
