//! The `[mcp]` table of config.toml: the MCP servers whose tools the model may call, their
//! approvals and limits, and the Claude-Desktop-style JSON files (`import`) that add more.
//! A server in config.toml wins over an imported one of the same name.

use crate::paths;
use crate::remote::Secret;
use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const DEFAULT_MAX_ROUNDS: usize = 8;
pub const DEFAULT_TIMEOUT_S: u64 = 60;
pub const DEFAULT_MAX_RESULT_CHARS: usize = 8000;

/// `[mcp]`. Every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The chat's limit of model → tools → model rounds in one turn [default: 8].
    pub max_rounds: Option<usize>,
    /// Seconds a tool call may take [default: 60]; a server may set its own.
    pub timeout_s: Option<u64>,
    /// The most characters of a result the model reads [default: 8000].
    pub max_result_chars: Option<usize>,
    /// Claude-Desktop-style JSON files (`{"mcpServers": {...}}`) whose servers are added.
    #[serde(default)]
    pub import: Vec<PathBuf>,
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
    /// The servers the `import` files add (those config.toml does not name), read by
    /// [`McpConfig::read_imports`] when the file is loaded.
    #[serde(skip)]
    pub imported: BTreeMap<String, ServerConfig>,
}

/// `[mcp.servers.NAME]`: exactly one of `command` (a spawned stdio server) and `url` (a
/// Streamable HTTP server).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to the server's environment; values are secrets (never shown or logged).
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    /// Sent with every HTTP request (`Authorization = "Bearer …"`); values are secrets.
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
    /// [default: true]
    pub enabled: Option<bool>,
    /// [default: ask]
    pub approve: Option<Approval>,
    pub timeout_s: Option<u64>,
    /// Per-tool overrides, by the server's tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolConfig>,
}

/// `[mcp.servers.NAME.tools.TOOL]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    pub approve: Option<Approval>,
    /// `false` hides the tool from the model.
    pub enabled: Option<bool>,
}

/// Whether a call needs the user's yes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// Ask before each call.
    #[default]
    Ask,
    /// Call without asking.
    Always,
    /// Refuse every call without asking.
    Never,
}

impl McpConfig {
    pub fn max_rounds(&self) -> usize {
        self.max_rounds.unwrap_or(DEFAULT_MAX_ROUNDS)
    }

    pub fn max_result_chars(&self) -> usize {
        self.max_result_chars.unwrap_or(DEFAULT_MAX_RESULT_CHARS)
    }

    /// A server's time limit for one call: its own, else `[mcp]`'s, else 60 s.
    pub fn timeout(&self, server: &ServerConfig) -> Duration {
        let secs = server.timeout_s.or(self.timeout_s);
        Duration::from_secs(secs.unwrap_or(DEFAULT_TIMEOUT_S))
    }

    /// Every server, config.toml's and the imported ones, by name.
    pub fn all_servers(&self) -> BTreeMap<String, ServerConfig> {
        let mut all = self.imported.clone();
        all.extend(self.servers.clone());
        all
    }

    /// Checks what serde cannot: names, one transport per server, limits.
    pub fn validate(&self, origin: &Path) -> Result<()> {
        let at = |what: String| anyhow!("{}: {what}", origin.display());
        if self.timeout_s == Some(0) {
            return Err(at("`mcp.timeout_s` must be at least 1".into()));
        }
        if self.max_result_chars == Some(0) {
            return Err(at("`mcp.max_result_chars` must be at least 1".into()));
        }
        for (name, server) in &self.servers {
            server.validate(name).map_err(|e| at(format!("{e}")))?;
        }
        Ok(())
    }

    /// Reads the `import` files (`~` expanded, relative paths from the config file's folder);
    /// a server config.toml also names is left out. A file that is missing or not the
    /// expected JSON is an error naming it.
    pub fn read_imports(&mut self, origin: &Path) -> Result<()> {
        let base = origin.parent().unwrap_or(Path::new("."));
        let mut imported = BTreeMap::new();
        for file in &self.import {
            let path = base.join(paths::expand_home(file));
            for (name, server) in read_claude_file(&path)? {
                if !self.servers.contains_key(&name) && !imported.contains_key(&name) {
                    imported.insert(name, server);
                }
            }
        }
        self.imported = imported;
        Ok(())
    }
}

impl ServerConfig {
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The approval of one of its tools: the tool's own, else the server's, else `ask`.
    pub fn approval(&self, tool: &str) -> Approval {
        let own = self.tools.get(tool).and_then(|t| t.approve);
        own.or(self.approve).unwrap_or_default()
    }

    /// Whether the model may see this tool (`enabled = false` in its table hides it).
    pub fn tool_enabled(&self, tool: &str) -> bool {
        self.tools.get(tool).and_then(|t| t.enabled).unwrap_or(true)
    }

    /// How it is reached, for `taper mcp list`: `stdio: CMD ARGS` or the URL (no secrets:
    /// env and headers are never shown).
    pub fn transport(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut line = format!("stdio: {command}");
                for arg in &self.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            (None, Some(url)) => url.clone(),
            (None, None) => "none".into(),
        }
    }

    fn validate(&self, name: &str) -> Result<()> {
        check_name(name)?;
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => {
                bail!("MCP server `{name}` has both `command` and `url`: give one")
            }
            (None, None) => bail!("MCP server `{name}` needs `command` (stdio) or `url` (HTTP)"),
            (Some(c), None) if c.trim().is_empty() => {
                bail!("MCP server `{name}` has an empty `command`")
            }
            (Some(_), None) if !self.headers.is_empty() => {
                bail!("MCP server `{name}`: `headers` are for `url` servers, not `command` ones")
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    bail!("MCP server `{name}` has url {url:?}: expected http:// or https://");
                }
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    bail!("MCP server `{name}`: `args`, `env` and `cwd` are for `command` servers");
                }
                for header in self.headers.keys() {
                    if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
                        bail!(
                            "MCP server `{name}` has a header named {header:?}, not a valid name"
                        );
                    }
                }
            }
            _ => {}
        }
        if self.timeout_s == Some(0) {
            bail!("MCP server `{name}` needs timeout_s of at least 1");
        }
        Ok(())
    }
}

/// Server names become part of tool names the model sees (`SERVER_TOOL`), so they keep to
/// what function names allow.
fn check_name(name: &str) -> Result<()> {
    let fits = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || name.len() > 40 || !name.chars().all(fits) {
        bail!("MCP server name {name:?} must be 1 to 40 letters, digits, `-` or `_`");
    }
    Ok(())
}

/// A Claude-Desktop-style file's `mcpServers`; other top-level keys are the other program's.
#[derive(Deserialize)]
struct ClaudeFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, ClaudeServer>,
}

/// One server there. Unknown keys are ignored: other programs write keys of their own.
#[derive(Deserialize)]
struct ClaudeServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, Secret>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, Secret>,
    #[serde(default)]
    disabled: bool,
}

fn read_claude_file(path: &Path) -> Result<BTreeMap<String, ServerConfig>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("{}: cannot read this MCP import: {e}", path.display()))?;
    let file: ClaudeFile = serde_json::from_str(&text)
        .map_err(|e| anyhow!("{}: not an MCP servers file: {e}", path.display()))?;
    let mut servers = BTreeMap::new();
    for (name, s) in file.mcp_servers {
        let kind = s.kind.as_deref().unwrap_or("");
        if !matches!(kind, "" | "stdio" | "http" | "streamable-http" | "sse") {
            bail!(
                "{}: MCP server `{name}` has type {kind:?}: taper speaks stdio and http",
                path.display()
            );
        }
        let server = ServerConfig {
            command: s.command,
            args: s.args,
            env: s.env,
            cwd: s.cwd,
            url: s.url,
            headers: s.headers,
            enabled: Some(!s.disabled),
            ..ServerConfig::default()
        };
        server
            .validate(&name)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        servers.insert(name, server);
    }
    Ok(servers)
}
