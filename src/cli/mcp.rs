//! `taper mcp list` (the configured MCP servers, their state and tools) and
//! `taper mcp call SERVER TOOL [JSON]` (one call, its result on stdout).

use crate::config::Config;
use crate::mcp::{ServerState, ToolHost};
use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use std::io::Write;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub action: McpAction,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Each configured server: its transport, state and tools (a failed one: why, and its log).
    List {
        /// Seconds to wait for servers to start.
        #[arg(long, default_value_t = 30)]
        wait: u64,
    },
    /// Call one tool and print its result (the note, if any, on stderr).
    Call {
        server: String,
        /// The server's name of the tool.
        tool: String,
        /// The arguments, a JSON object [default: {}].
        arguments: Option<String>,
    },
}

pub fn mcp(args: McpArgs, config: &Config) -> Result<()> {
    match args.action {
        McpAction::List { wait } => list(config, Duration::from_secs(wait)),
        McpAction::Call {
            server,
            tool,
            arguments,
        } => call(config, &server, &tool, arguments.as_deref()),
    }
}

fn list(config: &Config, wait: Duration) -> Result<()> {
    let (host, _events) = ToolHost::start(&config.mcp);
    host.wait_ready(wait);
    let servers = host.servers();
    let mut out = std::io::stdout().lock();
    if servers.is_empty() {
        writeln!(
            out,
            "No MCP servers configured (see [mcp.servers.NAME] in config.toml)."
        )?;
    }
    for s in &servers {
        let state = match &s.state {
            ServerState::Disabled => "disabled".to_string(),
            ServerState::Starting => format!("starting (not ready after {} s)", wait.as_secs()),
            ServerState::Ready => match s.tools.len() {
                1 => "ready, 1 tool".to_string(),
                n => format!("ready, {n} tools"),
            },
            ServerState::Failed(why) => format!("failed: {why}"),
        };
        writeln!(out, "{}  ({})  {state}", s.name, s.transport)?;
        if let (ServerState::Failed(_), Some(log)) = (&s.state, &s.log) {
            writeln!(out, "  log: {}", log.display())?;
        }
        for t in &s.tools {
            let about = t.description.as_deref().map(first_line).unwrap_or_default();
            writeln!(out, "  {:<24} {about}", t.name)?;
        }
    }
    drop(out);
    host.shutdown();
    Ok(())
}

fn call(config: &Config, server: &str, tool: &str, arguments: Option<&str>) -> Result<()> {
    let arguments = match arguments {
        None => serde_json::json!({}),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| anyhow!("the arguments are not valid JSON: {e}"))?,
    };
    let (host, _events) = ToolHost::start(&config.mcp);
    let result = host.call_blocking(server, tool, arguments);
    host.shutdown();
    if let Some(note) = &result.note {
        eprintln!("taper: {note}");
    }
    if result.is_error {
        bail!("{}", result.text);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", result.text)?;
    Ok(())
}

/// A description's first line, for a one-line listing.
fn first_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or("");
    let (line, cut) = match line.char_indices().nth(100) {
        Some((at, _)) => (&line[..at], "…"),
        None => (line, ""),
    };
    format!("{line}{cut}")
}
