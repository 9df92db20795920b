//! The full-screen chat (`taper`, `taper chat`): a client of the engine worker, built as
//! DESIGN.md says: one tokio loop ([`app`]), a pure [`update`] that turns messages into state
//! changes and engine commands, a [`keymap`], the [`state`] (one file per concern), and
//! pure rendering ([`ui`], one file per pane).
//!
//! Speed: candle's matmul threads spin while they wait for each other, so on a small machine
//! every moment our thread takes a core from them stalls the model (one busy thread once cut
//! decoding from 54 to 4 tok/s). The UI thread therefore sleeps unless input or a due frame
//! wakes it; while an answer streams it collects tokens once a frame instead of waking for
//! each; it draws at most [`DEFAULT_FPS`] frames a second, never redraws when idle, and
//! caches wrapped lines. Inference threads default to the physical cores, as for `taper ask`
//! (on 2 cores: 59 tok/s with 2 threads against 43 with 1, and the TUI within 4% of `ask`),
//! and candle's barrier spin limit stays at its default (lowering it slowed decoding).

pub mod app;
pub mod copy;
mod downloads;
pub mod keymap;
pub mod scan;
pub mod sessions;
pub mod state;
pub mod terminal;
pub mod ui;
pub mod update;

pub use state::State;
pub use update::{update, Effect, Msg};

use crate::cli;
use crate::config::Config;
use anyhow::{bail, Result};
use clap::Args;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Frames drawn per second at most while something changes. Text appearing 15 times a second
/// reads as smooth streaming, and each frame costs the model a little CPU.
pub const DEFAULT_FPS: u32 = 15;

/// `taper chat` options; `taper` alone is `taper chat` with none.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct ChatArgs {
    /// A path to a .gguf file, or the name of one in the models directory. Without it the
    /// model picker opens (unless the config names a default model).
    #[arg(short, long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub sampling: cli::SamplingArgs,
    /// The system prompt (editable in the TUI with Ctrl+S).
    #[arg(long)]
    pub system: Option<String>,
    /// KV-cache size in tokens, capped at the model's own context [default: 4096].
    #[arg(long = "ctx-size")]
    pub ctx_size: Option<usize>,
    /// The KV cache's number format: f16, q8_0 or f32 [default: f16].
    #[arg(long = "cache-type", value_name = "TYPE")]
    pub cache_type: Option<crate::engine::model::CacheType>,
    /// Compute threads (default: the physical cores, as `taper ask`).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Most frames drawn per second while text streams [default: 15].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=120))]
    pub fps: Option<u32>,
    /// Continue a saved conversation: the most recent one, or SESSION (an id, a unique prefix
    /// of one, or a session file). Its system prompt and sampling apply unless given here;
    /// without -m, the model that wrote its last answer is loaded if it is available.
    #[arg(long, value_name = "SESSION", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
}

/// Runs the chat until the user quits.
pub fn run(args: ChatArgs, config: &Config) -> Result<()> {
    // Before any thread starts: candle reads these once.
    cli::set_threads(args.threads.or(config.threads))?;

    let models_dir = cli::models_dir(config);
    let resumed = match &args.resume {
        Some(arg) => {
            let dir = crate::sessions::sessions_dir();
            Some(crate::sessions::store::load(
                &crate::sessions::store::resolve(&dir, Some(arg))?,
            )?)
        }
        None => None,
    };
    // After the session: a missing or unreadable one is reported even without a terminal.
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!("the chat needs a terminal; for pipes and scripts use `taper ask`");
    }
    let named = args.model.as_deref().or(config.default_model.as_deref());
    // Resuming without a model: the one that wrote the last answer, when it can be found.
    let last_model = resumed
        .as_ref()
        .and_then(|s| s.messages.iter().rev().find_map(|m| m.model.clone()))
        .filter(|name| named.is_none() && cli::resolve(Some(name), config).is_ok());
    let model = match named.or(last_model.as_deref()) {
        Some(name) => {
            let (path, user) = cli::resolve(Some(name), config)?;
            let mut entry = scan::describe(&path);
            if let Some(user) = user {
                entry.name = user.name;
                entry.tokenizer = user.tokenizer;
                entry.chat_template = user.chat_template;
            }
            Some(entry)
        }
        None => None,
    };
    let settings = state::Settings {
        system_prompt: args
            .system
            .clone()
            .or_else(|| config.system_prompt.clone())
            .unwrap_or_default(),
        sampling: args.sampling.params(config),
        max_tokens: args.sampling.max_tokens(config),
    };
    let context_size = args.ctx_size.unwrap_or(config.context_size());
    let mut state = State::new(settings, context_size, models_dir, Instant::now());
    state.cache_type = args.cache_type.unwrap_or(config.cache_type());
    if let Some(session) = resumed {
        sessions::restore(&mut state, session);
        // Flags given now win over the saved settings.
        let s = &mut state.settings;
        s.sampling = args.sampling.over(s.sampling.clone());
        s.max_tokens = args.sampling.max_tokens.unwrap_or(s.max_tokens);
        if let Some(system) = args.system {
            s.system_prompt = system;
        }
    }
    let fps = args.fps.unwrap_or(DEFAULT_FPS).max(1);
    let app = app::AppConfig {
        state,
        model,
        sources: scan::ModelSources {
            config: config.clone(),
            hub: crate::hub::HubConfig::from_env(),
        },
        frame: Duration::from_secs(1) / fps,
        log: crate::paths::data_dir().join("taper.log"),
    };
    // One thread for the UI: a multi-threaded runtime would add idle workers that compete
    // with the model's threads for the cores.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(app::run(app))
}
