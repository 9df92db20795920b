//! The chat's tools: what the MCP servers offer the model, the user's tool choice, and the
//! running tool loop (the call waiting for approval or running, the rounds so far).

use crate::chat::ToolCall;
use crate::mcp::{Approval, OfferedTool};
use std::collections::HashSet;
use std::time::Instant;

/// The tool loop's limit when the config names none.
pub const DEFAULT_MAX_ROUNDS: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub struct ToolsState {
    /// The tools of the servers that are ready, as the model sees them.
    pub offered: Vec<OfferedTool>,
    /// Rounds of calls after one question before the model must answer in prose.
    pub max_rounds: usize,
    /// Tools the user approved for the rest of this conversation (`a`).
    pub always: HashSet<String>,
    /// The loop under way, if any.
    pub run: Option<ToolRun>,
}

impl Default for ToolsState {
    fn default() -> Self {
        Self {
            offered: Vec::new(),
            max_rounds: DEFAULT_MAX_ROUNDS,
            always: HashSet::new(),
            run: None,
        }
    }
}

/// One question's tool loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolRun {
    /// Rounds of calls so far.
    pub rounds: usize,
    pub current: Option<CurrentCall>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CurrentCall {
    pub call: ToolCall,
    pub step: CallStep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStep {
    /// Waiting for y / a / n.
    Asking,
    Running {
        started: Instant,
    },
}

impl ToolsState {
    /// How calls of the tool the model named `name` are approved; None when no such tool is
    /// offered.
    pub fn approval(&self, name: &str) -> Option<Approval> {
        let tool = self.offered.iter().find(|t| t.name == name)?;
        match tool.approval {
            Approval::Ask if self.always.contains(name) => Some(Approval::Always),
            approval => Some(approval),
        }
    }

    /// The call waiting for the user's answer.
    pub fn asking(&self) -> Option<&ToolCall> {
        let current = self.run.as_ref()?.current.as_ref()?;
        (current.step == CallStep::Asking).then_some(&current.call)
    }

    /// The call running, and since when.
    pub fn running(&self) -> Option<(&ToolCall, Instant)> {
        let current = self.run.as_ref()?.current.as_ref()?;
        match current.step {
            CallStep::Running { started } => Some((&current.call, started)),
            CallStep::Asking => None,
        }
    }
}
