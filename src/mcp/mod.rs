//! The MCP (Model Context Protocol) client: the tools of MCP servers, offered to the model.
//!
//! Organised around one handle, [`ToolHost`] (`host.rs`): it starts the config's servers on a
//! thread of its own with its own tokio runtime, keeps their state in `shared.rs`, and reports
//! what happens as [`ToolEvent`]s. A server's life is `server.rs` (connect, list, re-list on
//! `list_changed`, notice its death, end it); reaching it is `connect.rs` (stdio or
//! Streamable HTTP, over the official `rmcp` SDK), ending it `process.rs`. One call is
//! `call.rs`, its result made text for the model by `content.rs`; `offer.rs` names the
//! tools the model sees. A stdio server's stderr goes to its bounded log (`log.rs`), and its
//! stdout is watched for what rmcp drops without a word (`watch.rs`). Configuration:
//! `config.rs`.
//!
//! To add a transport: a branch of `connect::connect`; everything after the handshake is
//! the same for every transport.

mod call;
pub mod config;
mod connect;
mod content;
mod host;
mod log;
mod offer;
mod process;
mod server;
mod shared;
mod types;
mod watch;

pub use config::{Approval, McpConfig, ServerConfig, ToolConfig};
pub use host::ToolHost;
pub use log::log_path;
pub use types::{
    tool_set, unknown_tool, OfferedTool, ServerState, ServerStatus, ToolEvent, ToolInfo,
    ToolResult, REFUSED,
};
