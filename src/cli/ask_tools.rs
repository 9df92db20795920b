//! `taper ask --tools`: the tool loop without a screen. The model is offered the configured
//! MCP servers' tools; each call is shown on stderr, approved (by `--yes`, the config, or a
//! question on the terminal), run, and its result given back, until the model answers in
//! prose on stdout or the rounds run out.

use super::ask::stream_answer;
use crate::chat::{Message, ToolCall};
use crate::engine::EngineHandle;
use crate::mcp::{tool_set, unknown_tool, Approval, McpConfig, OfferedTool, ServerState};
use crate::mcp::{ToolHost, ToolResult, REFUSED};
use crate::protocol::{GenerateRequest, SamplingParams, Speculation, ToolChoice, Usage};
use anyhow::{bail, Result};
use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

/// How long the servers have to start before the question is asked without the slow ones.
const START_LIMIT: Duration = Duration::from_secs(30);

/// The question and how to answer it.
pub struct Turn {
    pub messages: Vec<Message>,
    pub sampling: SamplingParams,
    pub max_tokens: usize,
    pub speculation: Speculation,
    /// For the first round; later rounds are `auto`, so the loop can end in prose.
    pub choice: ToolChoice,
    /// `--yes`.
    pub approve_all: bool,
    /// `--stats`: each round's figures too.
    pub show_rounds: bool,
}

/// `--tool-choice`'s value (clap has checked it is one of these).
pub fn choice(value: &str) -> ToolChoice {
    match value {
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        _ => ToolChoice::Auto,
    }
}

/// Answers `turn` with tools; the last answer's figures.
pub fn run(
    engine: &mut EngineHandle,
    turn: Turn,
    mcp: &McpConfig,
    out: &mut impl Write,
) -> Result<Usage> {
    if mcp.servers.is_empty() {
        bail!("--tools: no MCP server in the config (add one under [mcp.servers.NAME])");
    }
    let (host, _events) = ToolHost::start(mcp);
    host.wait_ready(START_LIMIT);
    for server in host.servers() {
        match server.state {
            ServerState::Failed(why) => eprintln!("taper: MCP server {}: {why}", server.name),
            ServerState::Starting => eprintln!(
                "taper: MCP server {} did not start within {} s; going on without it",
                server.name,
                START_LIMIT.as_secs()
            ),
            ServerState::Ready | ServerState::Disabled => {}
        }
    }
    let offered = host.offered();
    if offered.is_empty() {
        host.shutdown();
        bail!("--tools: no MCP server offers a tool");
    }
    let result = rounds(engine, turn, &host, &offered, mcp.max_rounds(), out);
    host.shutdown();
    result
}

fn rounds(
    engine: &mut EngineHandle,
    turn: Turn,
    host: &ToolHost,
    offered: &[OfferedTool],
    max_rounds: usize,
    out: &mut impl Write,
) -> Result<Usage> {
    let Turn {
        mut messages,
        sampling,
        max_tokens,
        speculation,
        choice,
        approve_all,
        show_rounds,
    } = turn;
    let tools = |choice: ToolChoice| tool_set(offered, choice);
    // `none` offers no tools at all; out of rounds, they are described but not callable.
    let mut tools_now = (choice != ToolChoice::None).then(|| tools(choice));
    let mut round = 0usize;
    loop {
        let request = GenerateRequest {
            tools: tools_now.take(),
            speculation,
            ..GenerateRequest::chat(
                round as u64 + 1,
                messages.clone(),
                false,
                sampling.clone(),
                max_tokens,
            )
        };
        let (usage, calls, prose) = stream_answer(engine, request, out)?;
        if calls.is_empty() {
            return Ok(usage);
        }
        if show_rounds {
            eprintln!(
                "taper: round {}: prompt {} tok (cached {}), generated {} tok",
                round + 1,
                usage.prompt_tokens,
                usage.cached_tokens,
                usage.generated_tokens
            );
        }
        if !prose.is_empty() {
            writeln!(out)?;
        }
        messages.push(Message::tool_calls(prose, calls.clone()));
        for call in &calls {
            let result = call_once(host, offered, call, approve_all);
            report(call, &result);
            messages.push(Message::tool_result(&call.id, result.text));
        }
        tools_now = Some(match round + 1 < max_rounds {
            true => tools(ToolChoice::Auto),
            false => {
                eprintln!(
                    "taper: {max_rounds} rounds of tool calls: the model answers without tools now"
                );
                tools(ToolChoice::None)
            }
        });
        round += 1;
    }
}

/// Approves and runs one call; a refusal or failure is a result the model reads.
fn call_once(host: &ToolHost, offered: &[OfferedTool], call: &ToolCall, yes: bool) -> ToolResult {
    let Some(tool) = offered.iter().find(|t| t.name == call.name) else {
        return ToolResult::failure(unknown_tool(&call.name), Duration::ZERO);
    };
    eprintln!(
        "taper: {} wants to call {} {}",
        tool.server,
        call.name,
        call.arguments.trim()
    );
    let approved = match tool.approval {
        Approval::Never => false,
        Approval::Always => true,
        Approval::Ask if yes => true,
        Approval::Ask => ask_on_terminal(&call.name),
    };
    if !approved {
        return ToolResult::failure(REFUSED, Duration::ZERO);
    }
    let arguments = match serde_json::from_str(&call.arguments) {
        Ok(serde_json::Value::Object(map)) => serde_json::Value::Object(map),
        _ => {
            let text = "The arguments are not a JSON object; the tool was not called.";
            return ToolResult::failure(text, Duration::ZERO);
        }
    };
    host.call_blocking(&tool.server, &tool.tool, arguments)
}

/// Asks y/n on the terminal (stdin when it is one); no terminal, no approval.
fn ask_on_terminal(name: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        eprintln!("taper: not run: no terminal to ask on (--yes runs calls without asking)");
        return false;
    }
    eprint!("taper: run {name}? [y/N] ");
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(_) => matches!(line.trim(), "y" | "Y" | "yes"),
        Err(_) => false,
    }
}

/// One line on stderr per result: its first line, or why it failed.
fn report(call: &ToolCall, result: &ToolResult) {
    let first = result.text.lines().next().unwrap_or("");
    let shown: String = first.chars().take(120).collect();
    let more = if shown.len() < result.text.trim_end().len() {
        "…"
    } else {
        ""
    };
    let what = if result.is_error {
        "failed"
    } else {
        "returned"
    };
    eprintln!(
        "taper: {} {what} in {:.1} s: {shown}{more}",
        call.name,
        result.elapsed.as_secs_f64()
    );
    if let Some(note) = &result.note {
        eprintln!("taper: {}: {note}", call.name);
    }
}
