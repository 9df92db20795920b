//! `taper` / `taper chat`: its flags, and what they resolve to before the screen comes up
//! (threads, the model to load, a resumed conversation, the settings). The TUI gets the
//! result ([`crate::tui::app::AppConfig`]) and never reads the command line itself.

use super::{RunArgs, SamplingArgs};
use crate::config::Config;
use crate::tui::{self, scan, state, State};
use anyhow::{bail, Result};
use clap::Args;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// `taper chat` options; `taper` alone is `taper chat` with none.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct ChatArgs {
    /// A path to a .gguf file, or the name of one in the models directory. Without it the
    /// model picker opens (unless the config names a default model).
    #[arg(short, long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// The system prompt (editable in the TUI with Ctrl+S).
    #[arg(long)]
    pub system: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
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
pub fn chat(args: ChatArgs, config: &Config) -> Result<()> {
    // Before any thread starts: candle reads these once.
    args.run.threads.apply(config)?;
    args.run.repack_cache.apply(config);
    let resumed = match &args.resume {
        Some(arg) => {
            let dir = crate::sessions::sessions_dir();
            let path = crate::sessions::store::resolve(&dir, Some(arg))?;
            Some(crate::sessions::store::load(&path)?)
        }
        None => None,
    };
    // After the session: a missing or unreadable one is reported even without a terminal.
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!("the chat needs a terminal; for pipes and scripts use `taper ask`");
    }
    let model = start_model(&args, config, resumed.as_ref())?;
    let mut state = initial_state(&args, config);
    if let Some(session) = resumed {
        tui::update::restore(&mut state, session);
        // Flags given now win over the saved settings.
        let s = &mut state.settings;
        s.sampling = args.sampling.over(s.sampling.clone());
        s.max_tokens = args.sampling.max_tokens.unwrap_or(s.max_tokens);
        s.speculation = args.sampling.speculative.given().unwrap_or(s.speculation);
        if let Some(system) = args.system {
            s.system_prompt = system;
        }
    }
    // Printed before the screen came up, and said again where it stays in view.
    for warning in &config.warnings {
        state
            .conversation
            .push_notice(state::NoticeLevel::Error, warning.clone());
    }
    let fps = args.fps.unwrap_or(tui::DEFAULT_FPS).max(1);
    tui::run(tui::app::AppConfig {
        state,
        model,
        sources: scan::ModelSources {
            config: config.clone(),
            hub: crate::hub::HubConfig::from_env(),
        },
        frame: Duration::from_secs(1) / fps,
        log: crate::paths::data_dir().join("taper.log"),
        mcp: config.mcp.clone(),
    })
}

/// The model to load at start: `-m`, else the config's default, else (resuming) the one that
/// wrote the last answer when it can be found. None opens the picker.
fn start_model(
    args: &ChatArgs,
    config: &Config,
    resumed: Option<&crate::sessions::Session>,
) -> Result<Option<state::ModelEntry>> {
    let named = args.model.as_deref().or(config.default_model.as_deref());
    let known = |name: &str| {
        config.find_target(name).is_some() || crate::models::resolve(Some(name), config).is_ok()
    };
    let last_model = resumed
        .and_then(|s| s.path().iter().rev().find_map(|m| m.model.clone()))
        .filter(|name| named.is_none() && known(name));
    let Some(name) = named.or(last_model.as_deref()) else {
        return Ok(None);
    };
    // `NAME/MODEL` of a configured remote: connected to once the screen is up.
    if let Some(target) = config.find_target(name) {
        return Ok(Some(scan::remote_entry(target)));
    }
    let (path, user) = crate::models::resolve(Some(name), config)?;
    // Before the screen and the engine start: reading this one header here costs nothing.
    let mut entry = scan::describe(&path);
    entry.draft = args.sampling.speculative.draft_model(&path, config)?;
    if let Some(user) = user {
        entry.name = user.name;
        entry.tokenizer = user.tokenizer;
        entry.chat_template = user.chat_template;
    }
    Ok(Some(entry))
}

/// The settings from the flags over the config, and an empty conversation.
fn initial_state(args: &ChatArgs, config: &Config) -> State {
    let settings = state::Settings {
        system_prompt: args
            .system
            .clone()
            .or_else(|| config.system_prompt.clone())
            .unwrap_or_default(),
        sampling: args.sampling.params(config),
        max_tokens: args.sampling.max_tokens(config),
        tool_choice: Default::default(),
        speculation: args.sampling.speculative.resolve(config),
    };
    let context_size = args.run.context_size(config);
    let models_dir = crate::models::models_dir(config);
    let mut state = State::new(settings, context_size, models_dir, Instant::now());
    state.cache_type = args.run.cache_type.resolve(config);
    state.keep_loaded = config.keep_loaded();
    state.tools.max_rounds = config.mcp.max_rounds();
    state
}
