//! The command-line entry points: `taper` / `taper chat` (the TUI), `taper ask`,
//! `taper tokenize`, `taper models`, `taper bench`, `taper perplexity`, `taper serve`,
//! `taper sessions`,
//! `taper export` and `taper mcp`; the flags they share.

mod ask;
mod ask_tools;
mod bench;
mod chat;
mod generated;
mod mcp;
mod models;
mod perplexity;
mod serve;
mod sessions;
mod sessions_edit;
mod sessions_find;
mod speculative;
mod values;

pub use ask::{stats_line, AskArgs, TokenizeArgs};
pub use bench::BenchArgs;
pub use chat::ChatArgs;
pub use mcp::{McpAction, McpArgs};
pub use models::{ModelsAction, ModelsArgs};
pub use perplexity::PerplexityArgs;
pub use serve::ServeArgs;
pub use sessions::{ExportArgs, SessionsAction, SessionsArgs};
pub use speculative::SpeculativeArg;

use crate::config::Config;
use crate::paths;
use crate::protocol::{CacheType, SamplingParams};
use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};
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
    /// An OpenAI-compatible server (llama-server, vLLM, SGLang, Ollama) for this run, as if
    /// the config had a `[[remotes]]` entry named `remote` (its models are `remote/MODEL`);
    /// the API key, if any, comes from TAPER_API_KEY.
    #[arg(long, global = true, value_name = "URL")]
    pub remote: Vec<String>,
    /// Without a command: the full-screen chat, with `taper chat`'s flags (`taper -m MODEL`
    /// is `taper chat -m MODEL`).
    #[command(flatten)]
    pub chat: ChatArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The full-screen chat (the default command).
    Chat(ChatArgs),
    /// Stream one answer to stdout.
    Ask(AskArgs),
    /// Print the token ids of TEXT as a JSON array (no BOS added).
    Tokenize(TokenizeArgs),
    /// Measure cold start, time to first token, prefill and decode speed and peak memory.
    Bench(BenchArgs),
    /// The catalogue and the local models; `models pull NAME` downloads one.
    Models(ModelsArgs),
    /// Perplexity over a text file as llama.cpp computes it; KL divergence against a base.
    Perplexity(PerplexityArgs),
    /// The engine as an OpenAI-compatible server: several clients at once, decoded together.
    Serve(ServeArgs),
    /// The saved conversations: list (the default), search, rename, rm.
    Sessions(SessionsArgs),
    /// Write a saved conversation as Markdown (or its raw JSON record).
    Export(ExportArgs),
    /// The MCP servers of the config: `mcp list` (their state and tools), `mcp call`.
    Mcp(McpArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the man page (roff): `taper man > taper.1`.
    Man,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
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

/// The KV cache and compute-thread flags of the commands that answer (`chat`, `ask`, `serve`);
/// an unset one falls back to the config file, then to the built-in default. (`bench` and
/// `perplexity` share `--cache-type`, and `perplexity` `--threads`; their `--ctx-size` says
/// other things: raised to what the prompts need, the scoring window.)
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct RunArgs {
    /// KV-cache size in tokens, capped at the model's own context [default: 4096].
    #[arg(long = "ctx-size", value_parser = values::at_least_one)]
    pub ctx_size: Option<usize>,
    #[command(flatten)]
    pub cache_type: CacheTypeArg,
    #[command(flatten)]
    pub threads: ThreadsArg,
    #[command(flatten)]
    pub repack_cache: RepackCacheArg,
}

impl RunArgs {
    pub fn context_size(&self, config: &Config) -> usize {
        self.ctx_size.unwrap_or(config.context_size())
    }
}

/// `--cache-type`, of every command that fills a KV cache.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct CacheTypeArg {
    /// The KV cache's number format: f16, q8_0 or f32 [default: the config's, else f16].
    #[arg(long = "cache-type", value_name = "TYPE")]
    pub cache_type: Option<CacheType>,
}

impl CacheTypeArg {
    /// The flag, else the config's, else f16.
    pub fn resolve(&self, config: &Config) -> CacheType {
        self.cache_type.unwrap_or(config.cache_type())
    }
}

/// `--threads`, of every command that runs one model (`bench` takes a list to compare).
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct ThreadsArg {
    /// Compute threads (default: the physical cores).
    #[arg(long, value_parser = values::threads)]
    pub threads: Option<usize>,
}

impl ThreadsArg {
    /// Sizes the compute pool: the flag, else the config's, else the physical cores. Once per
    /// process, before a model is loaded.
    pub fn apply(&self, config: &Config) -> Result<()> {
        crate::engine::threads::set_threads(self.threads.or(config.threads))
    }
}

/// `--no-repack-cache`, of every command that loads a local model.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct RepackCacheArg {
    /// Repack the model's matrices at load instead of reading them back from the repack cache
    /// (nor writing it) [default: the config's `repack_cache`, else on].
    #[arg(long)]
    pub no_repack_cache: bool,
}

impl RepackCacheArg {
    /// The cache directory this process's loads use: none with the flag or when the config
    /// turns the cache off.
    pub fn dir(&self, config: &Config) -> Option<PathBuf> {
        if self.no_repack_cache {
            return None;
        }
        config.repack_cache_dir()
    }

    /// Sets it for the process, before a model is loaded.
    pub fn apply(&self, config: &Config) {
        crate::engine::model::weights::packed_cache::configure(self.dir(config));
    }
}

/// Sampling flags shared by `ask` and `chat`; an unset one falls back to the config file, then
/// to the built-in default.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct SamplingArgs {
    /// Most tokens in one answer [default: 1024].
    #[arg(short = 'n', long = "max-tokens", value_parser = values::at_least_one)]
    pub max_tokens: Option<usize>,
    /// 0 picks the most likely token every time (greedy), up to 2 [default: 0.7].
    #[arg(long, allow_negative_numbers = true, value_parser = values::temperature)]
    pub temperature: Option<f32>,
    /// Keep only the K most likely tokens, 0 = off [default: 40].
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Keep the most likely tokens up to this total probability, 1 = off [default: 0.95].
    #[arg(long, allow_negative_numbers = true, value_parser = values::top_p)]
    pub top_p: Option<f32>,
    /// Drop tokens less likely than this fraction of the best one, 0 = off [default: 0.05].
    #[arg(long, allow_negative_numbers = true, value_parser = values::min_p)]
    pub min_p: Option<f32>,
    /// Penalise recently seen tokens, 1 = off, 0.1 to 10 [default: 1.1].
    #[arg(long, allow_negative_numbers = true, value_parser = values::repeat_penalty)]
    pub repeat_penalty: Option<f32>,
    /// Same seed, same answer.
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub speculative: SpeculativeArg,
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

    /// Only the flags given, over `base` (a resumed conversation's settings).
    pub fn over(&self, base: SamplingParams) -> SamplingParams {
        SamplingParams {
            temperature: self.temperature.unwrap_or(base.temperature),
            top_k: self.top_k.unwrap_or(base.top_k),
            top_p: self.top_p.unwrap_or(base.top_p),
            min_p: self.min_p.unwrap_or(base.min_p),
            repeat_penalty: self.repeat_penalty.unwrap_or(base.repeat_penalty),
            seed: self.seed.or(base.seed),
            ..base
        }
    }

    pub fn max_tokens(&self, config: &Config) -> usize {
        self.max_tokens.unwrap_or(config.max_tokens())
    }
}

pub fn run(cli: Cli) -> Result<()> {
    crate::engine::model::cpu::check_forced_env().map_err(anyhow::Error::msg)?;
    if cli.command.is_some() && cli.chat != ChatArgs::default() {
        // `taper -m MODEL bench` would otherwise quietly ignore the -m.
        bail!("chat options go after `taper` or `taper chat`, not before another command");
    }
    // These need no config (a broken one must not break a shell's completion).
    match &cli.command {
        Some(Command::Completions(args)) => return generated::completions(args.shell),
        Some(Command::Man) => return generated::man_page(),
        _ => {}
    }
    if let Some(Command::Bench(args)) = &cli.command {
        if args.measure_one {
            // The measuring child: its parent resolved everything and it needs no config.
            return bench::bench_measure_one(args);
        }
    }
    let mut config = match &cli.config {
        Some(path) => Config::load(path, true)?,
        None => Config::load(&paths::config_file(), false)?,
    };
    for warning in &config.warnings {
        eprintln!("taper: warning: {warning}");
    }
    add_quick_remotes(&mut config, &cli.remote)?;
    let done = match cli.command {
        None => chat::chat(cli.chat, &config),
        Some(Command::Chat(args)) => chat::chat(args, &config),
        Some(Command::Ask(args)) => ask::ask(args, &config),
        Some(Command::Tokenize(args)) => ask::tokenize(args, &config),
        Some(Command::Bench(args)) => bench::bench(args, &config),
        Some(Command::Models(args)) => models::models(args, &config),
        Some(Command::Perplexity(args)) => perplexity::perplexity(args, &config),
        Some(Command::Serve(args)) => serve::serve(args, &config),
        Some(Command::Sessions(args)) => sessions::sessions(args),
        Some(Command::Export(args)) => sessions::export(args),
        Some(Command::Mcp(args)) => mcp::mcp(args, &config),
        // Answered above, before the config was read.
        Some(Command::Completions(_) | Command::Man) => Ok(()),
    };
    // A first load's repack cache is written in the background; the process waits for it
    // rather than leave it half-written (it would only be written again next time).
    crate::engine::model::weights::packed_cache::finish_writes();
    done
}

/// `--remote URL` entries: `remote`, then `remote2`, ... (checked as config entries are).
fn add_quick_remotes(config: &mut Config, urls: &[String]) -> Result<()> {
    for (i, url) in urls.iter().enumerate() {
        let name = match i {
            0 => "remote".to_string(),
            i => format!("remote{}", i + 1),
        };
        config.remotes.retain(|r| r.name != name);
        config
            .remotes
            .push(crate::config::RemoteConfig::quick(&name, url));
    }
    if !urls.is_empty() {
        config.validate_remotes(std::path::Path::new("--remote"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_flags_work_without_the_chat_command() {
        let cli = Cli::try_parse_from(["taper", "-m", "m.gguf", "--threads", "2", "--resume"])
            .expect("chat flags at the top level");
        assert!(cli.command.is_none());
        assert_eq!(cli.chat.model.as_deref(), Some("m.gguf"));
        assert_eq!(
            (cli.chat.run.threads.threads, cli.chat.resume.as_deref()),
            (Some(2), Some(""))
        );
        let chat = Cli::try_parse_from(["taper", "chat", "-m", "m.gguf"]).expect("taper chat");
        assert!(
            matches!(chat.command, Some(Command::Chat(a)) if a.model.as_deref() == Some("m.gguf"))
        );
        // A chat flag with another command would be silently ignored: refused instead.
        let both = Cli::try_parse_from(["taper", "-m", "m.gguf", "bench"]).expect("parses");
        let err = run(both).expect_err("chat flag before bench");
        assert!(
            err.to_string().contains("not before another command"),
            "{err}"
        );
        let bench = Cli::try_parse_from(["taper", "--config", "c.toml", "bench", "-m", "m.gguf"]);
        assert!(matches!(
            bench.expect("global --config").command,
            Some(Command::Bench(_))
        ));
    }
}
