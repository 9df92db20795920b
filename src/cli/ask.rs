//! `taper ask` (one streamed answer) and `taper tokenize` (token ids as JSON).

use super::{ask_tools, ModelArgs, RunArgs, SamplingArgs};
use crate::chat::{Message, ToolCall};
use crate::config::Config;
use crate::engine::gguf::GgufHeader;
use crate::engine::tokenizer::TextTokenizer;
use crate::engine::{EngineCommand, EngineHandle};
use crate::models::resolve;
use crate::protocol::{Constraint, EngineEvent, GenerateRequest, LoadRequest, ModelInfo};
use crate::protocol::{StopReason, Usage};
use crate::stats::{self, human_bytes};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

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
    #[command(flatten)]
    pub run: RunArgs,
    /// Print usage figures to stderr when done.
    #[arg(long)]
    pub stats: bool,
    /// Answer with a JSON object: a grammar holds the answer to JSON, so it always parses.
    #[arg(long, conflicts_with_all = ["json_schema", "grammar"])]
    pub json: bool,
    /// Answer with JSON valid against the JSON Schema in FILE.
    #[arg(long = "json-schema", value_name = "FILE", conflicts_with = "grammar")]
    pub json_schema: Option<PathBuf>,
    /// Answer in the grammar in FILE (Lark syntax, as llguidance reads it).
    #[arg(long, value_name = "FILE")]
    pub grammar: Option<PathBuf>,
    /// Offer the tools of the MCP servers in the config; calls go to stderr, the answer to
    /// stdout.
    #[arg(long, conflicts_with_all = ["json", "json_schema", "grammar", "raw"])]
    pub tools: bool,
    /// Run every tool call without asking (a tool the config says `never` for is still
    /// refused).
    #[arg(long, requires = "tools")]
    pub yes: bool,
    /// Whether the model may (auto), may not (none) or must (required) call a tool first.
    #[arg(long, value_name = "CHOICE", requires = "tools", default_value = "auto",
          value_parser = ["auto", "none", "required"])]
    pub tool_choice: String,
    /// The prompt; none, or "-", reads stdin.
    pub prompt: Option<String>,
}

#[derive(Debug, Args)]
pub struct TokenizeArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    pub text: String,
}

/// What `--json`, `--json-schema` or `--grammar` asks the answer to match.
fn constraint(args: &AskArgs) -> Result<Option<Constraint>> {
    let read = |path: &PathBuf, what: &str| {
        std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the {what} {}", path.display()))
    };
    if args.json {
        return Ok(Some(Constraint::JsonObject));
    }
    if let Some(path) = &args.json_schema {
        let schema = serde_json::from_str(&read(path, "JSON schema")?)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        return Ok(Some(Constraint::JsonSchema(schema)));
    }
    match &args.grammar {
        Some(path) => Ok(Some(Constraint::Lark(read(path, "grammar")?))),
        None => Ok(None),
    }
}

/// The prompt: PROMPT; or stdin for `-` or none; or, when text is piped in as well (`cat
/// notes.txt | taper ask "summarize"`), PROMPT, a blank line, then the piped text.
fn read_prompt(prompt: Option<String>) -> Result<String> {
    let stdin = || -> Result<String> {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the prompt from stdin")?;
        Ok(text)
    };
    match prompt {
        None => stdin(),
        Some(p) if p == "-" => stdin(),
        Some(p) if std::io::stdin().is_terminal() => Ok(p),
        Some(p) => {
            let piped = stdin()?;
            if piped.trim().is_empty() {
                Ok(p)
            } else {
                Ok(format!("{p}\n\n{piped}"))
            }
        }
    }
}

pub(super) fn ask(args: AskArgs, config: &Config) -> Result<()> {
    args.run.threads.apply(config)?;
    args.run.repack_cache.apply(config);
    let named = args
        .model
        .model
        .as_deref()
        .or(config.default_model.as_deref());
    let remote = named.and_then(|name| config.find_target(name));
    if remote.is_some() && args.raw {
        bail!("--raw sends text without a chat template, which only local models can do");
    }
    let constraint = constraint(&args)?;
    // What a cut-short answer fails to complete (tool calls have their own grammar and end).
    let held_to = constraint
        .as_ref()
        .filter(|_| !args.tools)
        .map(Constraint::describe);
    if remote.is_some() && matches!(constraint, Some(Constraint::Lark(_))) {
        bail!(
            "--grammar is in llguidance's syntax, which only local models read; a remote model \
             takes --json or --json-schema (sent as OpenAI's response_format)"
        );
    }
    let load = match remote {
        Some(target) => EngineCommand::Connect(target),
        None => load_command(&args, config)?,
    };
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
    engine.send(load)?;
    let info = loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Loaded { info, notices }) => {
                // The notices are about the chat template, which --raw does not use.
                if !args.raw {
                    for notice in notices {
                        eprintln!("taper: {notice}");
                    }
                }
                break info;
            }
            Some(EngineEvent::Failed { message, .. }) => bail!("{message}"),
            Some(_) => continue,
            None => bail!("the engine stopped while loading"),
        }
    };
    let speculation = args.sampling.speculative.resolve(config);
    let request = GenerateRequest {
        constraint,
        speculation,
        ..GenerateRequest::chat(
            1,
            messages.clone(),
            args.raw,
            sampling.clone(),
            args.sampling.max_tokens(config),
        )
    };
    let mut out = std::io::stdout().lock();
    let usage = match args.tools {
        true => {
            let turn = ask_tools::Turn {
                messages,
                sampling,
                max_tokens: args.sampling.max_tokens(config),
                speculation,
                choice: ask_tools::choice(&args.tool_choice),
                approve_all: args.yes,
                show_rounds: args.stats,
            };
            ask_tools::run(&mut engine, turn, &config.mcp, &mut out)?
        }
        false => stream_answer(&mut engine, request, &mut out)?.0,
    };
    writeln!(out)?;
    let mut incomplete = None;
    if let Some(cut) = usage.stop.and_then(|s| s.cut_short(usage.generated_tokens)) {
        let raise = match usage.stop {
            Some(StopReason::ContextFull) => "--ctx-size gives it more room",
            _ => "-n raises the limit",
        };
        match held_to {
            // A script reading a structured answer must not take a cut one for a whole one:
            // the partial answer stays on stdout, and the exit status says it does not parse.
            Some(held_to) => {
                incomplete = Some(anyhow!(
                    "the answer was {cut}, so it does not complete {held_to}; {raise}"
                ))
            }
            None => eprintln!("taper: the answer was {cut}; {raise}"),
        }
    }
    if usage.dropped_messages > 0 {
        eprintln!(
            "taper: left out the {} oldest messages to fit the context",
            usage.dropped_messages
        );
    }
    if args.stats {
        eprintln!("{}", stats_line(&usage, &info));
    }
    incomplete.map_or(Ok(()), Err)
}

/// Sends `request` and writes its answer's text to `out` as it comes; its figures and the
/// tools it called, when it ends.
pub(super) fn stream_answer(
    engine: &mut EngineHandle,
    request: GenerateRequest,
    out: &mut impl Write,
) -> Result<(Usage, Vec<ToolCall>, String)> {
    engine.send(EngineCommand::Generate(request))?;
    let mut text = String::new();
    loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Token { text: piece, .. }) => {
                out.write_all(piece.as_bytes())?;
                out.flush()?;
                text.push_str(&piece);
            }
            Some(EngineEvent::Finished {
                usage, tool_calls, ..
            }) => return Ok((usage, tool_calls, text)),
            Some(EngineEvent::Failed { message, .. }) => {
                // The partial answer stays on stdout, ended like a whole one.
                if !text.is_empty() {
                    writeln!(out)?;
                }
                bail!("{message}")
            }
            Some(_) => continue,
            None => return Err(anyhow!("the engine stopped while generating")),
        }
    }
}

/// The local model `-m` names, as a load command.
fn load_command(args: &AskArgs, config: &Config) -> Result<EngineCommand> {
    let (model_path, user_model) = resolve(args.model.model.as_deref(), config)?;
    let draft_model = args
        .sampling
        .speculative
        .required_draft(&model_path, config)?;
    Ok(EngineCommand::Load(LoadRequest {
        model_path,
        tokenizer_json: args
            .model
            .tokenizer
            .clone()
            .or_else(|| user_model.as_ref().and_then(|m| m.tokenizer.clone())),
        context_size: args.run.context_size(config),
        cache_type: args.run.cache_type.resolve(config),
        chat_template: user_model.and_then(|m| m.chat_template),
        // One question, one model.
        keep_loaded: 1,
        draft_model,
    }))
}

/// The one-line summary `--stats` prints.
pub fn stats_line(usage: &Usage, info: &ModelInfo) -> String {
    let peak = stats::peak_rss_bytes()
        .map(human_bytes)
        .unwrap_or_else(|| "n/a".into());
    // A remote model computes elsewhere: no threads or kernels of ours to name.
    let compute = match &info.remote {
        Some(url) => format!("remote {url}"),
        None => format!("threads {} | kernels {}", info.threads, info.kernels),
    };
    // The kernel path stays last: scripts read it from the end of the line.
    format!(
        "prompt {} tok (cached {}) | prefill {:.1} tok/s | ttft {:.3} s | generated {} tok | \
         decode {:.1} tok/s{} | load {:.2} s | peak RSS {peak} | {compute}",
        usage.prompt_tokens,
        usage.cached_tokens,
        usage.prefill_tok_s(),
        usage.ttft_s,
        usage.generated_tokens,
        usage.decode_tok_s(),
        speculation_figures(usage),
        info.load_s,
    ) + &server_figures(usage)
}

/// Speculative decoding's share: the drafts kept and the tokens each forward pass gave;
/// nothing where no token was drafted (speculation off, or nothing worth guessing).
fn speculation_figures(usage: &Usage) -> String {
    let Some(per_pass) = usage.tokens_per_pass().filter(|_| usage.drafted_tokens > 0) else {
        return String::new();
    };
    let kept = usage
        .acceptance()
        .map_or(String::new(), |a| format!(" ({:.0}%)", a * 100.0));
    format!(
        " | drafts {}/{} kept{kept} | {per_pass:.2} tok/pass",
        usage.accepted_tokens, usage.drafted_tokens
    )
}

/// What a remote server reported, labelled as the server's (the figures before it are
/// measured here, as the answer arrived).
fn server_figures(usage: &Usage) -> String {
    let Some(s) = &usage.server else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(r) = s.prompt_tok_s {
        parts.push(format!("prompt {r:.1} tok/s"));
    }
    if let Some(r) = s.decode_tok_s {
        parts.push(format!("decode {r:.1} tok/s"));
    }
    if let Some(n) = s.completion_tokens {
        parts.push(format!("generated {n} tok"));
    }
    if let Some(n) = s.cached_tokens {
        parts.push(format!("cached {n} tok"));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(" | reported by the server: {}", parts.join(", "))
}

pub(super) fn tokenize(args: TokenizeArgs, config: &Config) -> Result<()> {
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
