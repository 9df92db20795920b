//! The TUI's tests in one binary: `update`, the keymap, Markdown and screen snapshots without a
//! terminal; the real binary in tmux (e2e, abuse, download, speed, tools with an MCP server);
//! long and remote sessions.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/hub_server.rs"]
mod hub_server;
#[path = "../support/llama_server.rs"]
mod llama_server;
#[path = "../support/serve.rs"]
mod serve_support;
#[path = "../support/tui/mod.rs"]
mod tui_support;
#[path = "../support/venv.rs"]
mod venv;

mod abuse;
mod branches;
mod continue_answer;
mod download;
mod e2e;
mod files;
mod keymap;
mod long_session;
mod markdown;
mod remote;
mod resident;
mod session_filter;
mod sessions;
mod snapshots;
mod speed;
mod terminal;
mod tools;
mod update;
