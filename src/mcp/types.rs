//! What the MCP host hands its users: servers' states and tools, the tools offered to the
//! model, events, and call results. Plain data, no behaviour beyond building a failure.

use super::config::Approval;
use std::path::PathBuf;
use std::time::Duration;

/// Where a configured server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// `enabled = false` in the config: never started.
    Disabled,
    /// Spawned or connecting; not yet listed.
    Starting,
    /// Initialized and its tools listed.
    Ready,
    /// Could not start, or stopped; one sentence saying why.
    Failed(String),
}

/// One configured server, as `taper mcp list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
    /// Its tools, all of them (those hidden from the model too), in the server's order.
    pub tools: Vec<ToolInfo>,
    /// Where its stderr goes (stdio servers).
    pub log: Option<PathBuf>,
    /// `stdio: CMD ARGS` or the URL.
    pub transport: String,
}

/// One tool as its server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: serde_json::Value,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    /// What the model sees and calls: the tool's name, or `SERVER_TOOL` when two servers
    /// share it.
    pub name: String,
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    pub spec: crate::protocol::Tool,
    pub approval: Approval,
}

/// What happens in the background.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEvent {
    ServerReady {
        server: String,
        tools: usize,
    },
    ServerFailed {
        server: String,
        message: String,
    },
    /// The server's tools changed (`notifications/tools/list_changed`); they are listed anew.
    ToolsChanged {
        server: String,
    },
    CallDone {
        call_id: String,
        result: ToolResult,
    },
}

/// A call's outcome, as the model reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// What the model reads, at most `max_result_chars` characters.
    pub text: String,
    /// The tool failed, or the call could not be made.
    pub is_error: bool,
    /// What was cut or left out, one line (for the user, not the model).
    pub note: Option<String>,
    pub elapsed: Duration,
}

/// What the model reads of a call the user refused (in the chat or in `ask`).
pub const REFUSED: &str = "The user refused to run this tool call.";

/// What the model reads of a call of a tool no server offers.
pub fn unknown_tool(name: &str) -> String {
    format!("There is no tool named {name:?}.")
}

/// The offered tools as a request's tool set, with `choice`.
pub fn tool_set(
    offered: &[OfferedTool],
    choice: crate::protocol::ToolChoice,
) -> crate::protocol::ToolSet {
    crate::protocol::ToolSet {
        tools: offered.iter().map(|t| t.spec.clone()).collect(),
        choice,
        parallel: true,
    }
}

impl ToolResult {
    /// A call that failed before or instead of a result: one sentence.
    pub fn failure(text: impl Into<String>, elapsed: Duration) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            note: None,
            elapsed,
        }
    }
}
