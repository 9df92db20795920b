//! Remote models: OpenAI-compatible chat servers (llama-server, vLLM, SGLang, Ollama) as a
//! second kind of backend behind the engine's commands and events.
//!
//! A remote is a `[[remotes]]` entry of the config (or `--remote URL`), resolved there
//! (`RemoteConfig::resolve`); its models are named `NAME/MODEL`. `list` asks a server what it serves, `stream` runs one chat turn over
//! Server-Sent Events (parsed by `sse`, each event read by `chunk`), `http` turns transport and
//! status failures into one sentence each. API keys are [`Secret`]s: never printed, logged or
//! saved, and sent only to the remote's own host (redirects are never followed).

pub mod chunk;
pub mod http;
pub mod list;
pub mod request;
pub mod sse;
pub mod stream;

use serde::Deserialize;
use std::time::Duration;

/// How long a stream may go without a byte before it counts as stalled, unless the remote
/// sets `stall_timeout_s`.
pub const DEFAULT_STALL: Duration = Duration::from_secs(60);

/// Which API a server speaks for its model list (chat is the OpenAI API for every kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteKind {
    /// `GET /v1/models` (llama-server, vLLM, SGLang, OpenAI).
    Openai,
    /// `GET /api/tags` (Ollama's own list; its chat is OpenAI-compatible under `/v1`).
    Ollama,
}

/// An API key: its text never appears in `Debug` output, so it cannot reach a log, a
/// panic message or the screen by accident.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }
    /// The key itself, for the Authorization header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// One server, resolved from the config: where it is and how to authenticate.
#[derive(Debug, Clone, PartialEq)]
pub struct Remote {
    pub name: String,
    /// The OpenAI base URL, without a trailing slash (`http://host:8080/v1`).
    pub base_url: String,
    /// The environment variable the key comes from, named in 401/403 sentences.
    pub key_env: Option<String>,
    pub key: Option<Secret>,
    pub kind: Option<RemoteKind>,
    /// Only these models are offered, when given.
    pub allow: Option<Vec<String>>,
    pub stall: Duration,
}

/// One model on one server: what the engine connects to.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTarget {
    pub remote: Remote,
    pub model: String,
}

impl RemoteTarget {
    /// `NAME/MODEL`, as the picker, the chat and saved sessions name it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.remote.name, self.model)
    }
}

impl Remote {
    /// The server's root: the base URL without its `/v1` (llama-server's `/props`, Ollama's
    /// `/api/tags` live there).
    pub fn root_url(&self) -> &str {
        self.base_url
            .strip_suffix("/v1")
            .unwrap_or(self.base_url.as_str())
    }

    /// `host:port`, for sentences about the connection.
    pub fn host(&self) -> &str {
        let rest = self
            .base_url
            .split_once("://")
            .map_or(self.base_url.as_str(), |(_, r)| r);
        rest.split('/').next().unwrap_or(rest)
    }

    pub fn allows(&self, model: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|list| list.iter().any(|m| m == model))
    }
}

/// A base URL without a trailing slash; a bare `http://host:port` gets the usual `/v1`.
pub fn normalize_url(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    let after_scheme = url.split_once("://").map_or(url, |(_, r)| r);
    if after_scheme.contains('/') {
        url.to_string()
    } else {
        format!("{url}/v1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_server_address_gets_the_v1_path() {
        assert_eq!(normalize_url("http://h:8080"), "http://h:8080/v1");
        assert_eq!(normalize_url("http://h:8080/"), "http://h:8080/v1");
        assert_eq!(normalize_url("https://h/api/v1/"), "https://h/api/v1");
    }

    #[test]
    fn a_key_never_shows_in_debug_output() {
        let s = Secret::new("sk-very-secret");
        assert!(!format!("{s:?}").contains("very"));
        let r = Remote {
            name: "x".into(),
            base_url: "http://h/v1".into(),
            key_env: None,
            key: Some(s),
            kind: None,
            allow: None,
            stall: DEFAULT_STALL,
        };
        assert!(!format!("{r:?}").contains("secret"));
        assert_eq!((r.host(), r.root_url()), ("h", "http://h"));
    }
}
