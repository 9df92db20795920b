//! The user's settings: `config.toml` (serde + toml), built-in defaults, and their precedence
//! (command-line flags override the file, the file overrides the defaults).

use crate::mcp::McpConfig;
use crate::protocol::sampling as ranges;
use crate::protocol::{CacheType, SamplingParams, Speculation};
use crate::remote::{normalize_url, Remote, RemoteKind, RemoteTarget, Secret, DEFAULT_STALL};
use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything `config.toml` can say. Every key is optional; unknown keys are errors (typos
/// should not be silently ignored).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// A catalogue name, a local model name, or a path.
    pub default_model: Option<String>,
    pub system_prompt: Option<String>,
    pub context_size: Option<usize>,
    /// The KV cache's number format: f16 (the default), q8_0 or f32.
    pub cache_type: Option<CacheType>,
    pub threads: Option<usize>,
    pub max_tokens: Option<usize>,
    /// Speculative decoding: ngram, draft (with the model's pair in `draft_models`) or off
    /// (the default).
    pub speculative: Option<Speculation>,
    /// Draft models: each key a model (a name `-m` takes), its value the smaller model with
    /// the same vocabulary that drafts for it, e.g. `"qwen3-4b" = "qwen3-0.6b"`.
    #[serde(default)]
    pub draft_models: std::collections::BTreeMap<String, String>,
    pub models_dir: Option<PathBuf>,
    /// Models the chat keeps loaded at most (the one in use included), so that switching back
    /// to one costs no load (default [`DEFAULT_KEEP_LOADED`]; 1 releases each model when
    /// another is picked; 0 is refused).
    pub keep_loaded: Option<usize>,
    /// Keep each model's repacked matrices in the cache directory, so later loads read them
    /// back instead of repacking (default true).
    pub repack_cache: Option<bool>,
    #[serde(default)]
    pub sampling: SamplingConfig,
    /// User-defined models.
    #[serde(default)]
    pub models: Vec<UserModel>,
    /// OpenAI-compatible servers whose models are offered as `NAME/MODEL`.
    #[serde(default)]
    pub remotes: Vec<RemoteConfig>,
    /// MCP servers whose tools the model may call, and their limits.
    #[serde(default)]
    pub mcp: McpConfig,
    /// What the user should be told about the file itself (an API key others can read).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// A `[[remotes]]` entry: an OpenAI-compatible server (llama-server, vLLM, SGLang, Ollama).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteConfig {
    /// The first part of `NAME/MODEL`; no slashes.
    pub name: String,
    /// The OpenAI base URL, `http://host:8080/v1` (a bare `http://host:port` gets `/v1`).
    pub url: String,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// The key itself; only in a file no one else can read (taper warns otherwise).
    pub api_key: Option<Secret>,
    /// Offer only these models.
    pub models: Option<Vec<String>>,
    /// `openai` or `ollama`, when detection is not enough.
    pub kind: Option<RemoteKind>,
    /// Seconds without a byte before a stream counts as stalled [default: 60].
    pub stall_timeout_s: Option<u64>,
}

impl RemoteConfig {
    /// The remote `--remote URL` adds: no key file, the key (if any) from `TAPER_API_KEY`.
    pub fn quick(name: &str, url: &str) -> Self {
        Self {
            name: name.to_string(),
            url: url.to_string(),
            api_key_env: Some("TAPER_API_KEY".to_string()),
            api_key: None,
            models: None,
            kind: None,
            stall_timeout_s: None,
        }
    }

    /// The server this entry names; the key is read from its environment variable now (an
    /// unset variable is no key: the server's 401, if any, then names the variable).
    pub fn resolve(&self) -> Remote {
        let env_key = self
            .api_key_env
            .as_deref()
            .and_then(|var| std::env::var(var).ok())
            .filter(|k| !k.trim().is_empty())
            .map(|k| Secret::new(k.trim()));
        Remote {
            name: self.name.clone(),
            base_url: normalize_url(&self.url),
            key_env: self.api_key_env.clone(),
            key: env_key.or_else(|| self.api_key.clone()),
            kind: self.kind,
            allow: self.models.clone(),
            stall: self
                .stall_timeout_s
                .map(Duration::from_secs)
                .unwrap_or(DEFAULT_STALL),
        }
    }
}

/// Sampling defaults; each overrides the built-in one.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingConfig {
    pub temperature: Option<f32>,
    pub top_k: Option<usize>,
    pub top_p: Option<f32>,
    pub min_p: Option<f32>,
    pub repeat_penalty: Option<f32>,
    pub repeat_last_n: Option<usize>,
    pub seed: Option<u64>,
}

/// A model the user names: a local path, or a hub repo and file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserModel {
    pub name: String,
    pub path: Option<PathBuf>,
    pub repo: Option<String>,
    pub file: Option<String>,
    /// A chat template (Jinja text) to use instead of the file's.
    pub chat_template: Option<String>,
    /// A tokenizer.json to use instead of the vocabulary in the GGUF.
    pub tokenizer: Option<PathBuf>,
}

pub const DEFAULT_CONTEXT_SIZE: usize = 4096;
pub const DEFAULT_MAX_TOKENS: usize = 1024;
pub const DEFAULT_KEEP_LOADED: usize = 3;

impl Config {
    /// Every remote the config names, resolved.
    pub fn remotes(&self) -> Vec<Remote> {
        self.remotes.iter().map(RemoteConfig::resolve).collect()
    }

    /// `NAME/MODEL` when NAME is one of the config's remotes (the model part may hold more
    /// slashes: vLLM serves models by their hub name, `Qwen/Qwen3-8B`).
    pub fn find_target(&self, name: &str) -> Option<RemoteTarget> {
        let (remote, model) = name.split_once('/')?;
        let c = self.remotes.iter().find(|r| r.name == remote)?;
        (!model.is_empty()).then(|| RemoteTarget {
            remote: c.resolve(),
            model: model.to_string(),
        })
    }

    /// Parses config text; errors name the file, the line and the key, and what was expected.
    pub fn parse(text: &str, origin: &Path) -> Result<Self> {
        let config: Config = toml::from_str(text)
            .map_err(|e| anyhow!("{}: {}", origin.display(), e.to_string().trim_end()))?;
        config.validate(origin)?;
        Ok(config)
    }

    fn validate(&self, origin: &Path) -> Result<()> {
        let bad = |key: &str, expected: &str| {
            Err(anyhow!("{}: `{key}` must be {expected}", origin.display()))
        };
        if self.context_size == Some(0) {
            return bad("context_size", "at least 1");
        }
        if self.threads == Some(0) {
            return bad("threads", "at least 1");
        }
        if self.keep_loaded == Some(0) {
            return bad("keep_loaded", "at least 1 (the model in use)");
        }
        let s = &self.sampling;
        let settings = [
            (ranges::TEMPERATURE, s.temperature),
            (ranges::TOP_P, s.top_p),
            (ranges::MIN_P, s.min_p),
            (ranges::REPEAT_PENALTY, s.repeat_penalty),
        ];
        for (range, value) in settings {
            if let Some(Err(e)) = value.map(|v| range.check(v.into())) {
                bail!("{}: sampling.{e}", origin.display());
            }
        }
        self.validate_remotes(origin)?;
        self.mcp.validate(origin)?;
        for m in &self.models {
            if m.path.is_none() && (m.repo.is_none() || m.file.is_none()) {
                return Err(anyhow!(
                    "{}: model `{}` needs either `path`, or `repo` and `file`",
                    origin.display(),
                    m.name
                ));
            }
        }
        Ok(())
    }

    /// Checks every `[[remotes]]` entry (also those `--remote` adds).
    pub fn validate_remotes(&self, origin: &Path) -> Result<()> {
        for (i, r) in self.remotes.iter().enumerate() {
            validate_remote(r, &self.remotes[..i], origin)?;
        }
        Ok(())
    }

    /// Reads `path`; a missing file is the empty config only when `required` is false.
    pub fn load(path: &Path, required: bool) -> Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let mut config = Self::parse(&text, path)?;
                config.mcp.read_imports(path)?;
                config.warn_if_keys_readable(path);
                Ok(config)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(Self::default()),
            Err(e) => Err(anyhow!("{}: cannot read: {e}", path.display())),
        }
    }

    /// Sampling parameters: built-in defaults, overridden by this file.
    pub fn sampling(&self) -> SamplingParams {
        let d = SamplingParams::default();
        let s = &self.sampling;
        SamplingParams {
            temperature: s.temperature.unwrap_or(d.temperature),
            top_k: s.top_k.unwrap_or(d.top_k),
            top_p: s.top_p.unwrap_or(d.top_p),
            min_p: s.min_p.unwrap_or(d.min_p),
            repeat_penalty: s.repeat_penalty.unwrap_or(d.repeat_penalty),
            repeat_last_n: s.repeat_last_n.unwrap_or(d.repeat_last_n),
            seed: s.seed.or(d.seed),
            ..d
        }
    }

    pub fn cache_type(&self) -> CacheType {
        self.cache_type.unwrap_or_default()
    }

    pub fn context_size(&self) -> usize {
        self.context_size.unwrap_or(DEFAULT_CONTEXT_SIZE)
    }

    pub fn keep_loaded(&self) -> usize {
        self.keep_loaded.unwrap_or(DEFAULT_KEEP_LOADED)
    }

    /// Where loads keep repacked matrices, unless the config turns the cache off.
    pub fn repack_cache_dir(&self) -> Option<PathBuf> {
        self.repack_cache
            .unwrap_or(true)
            .then(crate::paths::repack_cache_dir)
    }

    pub fn max_tokens(&self) -> usize {
        self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)
    }

    pub fn speculation(&self) -> Speculation {
        self.speculative.unwrap_or_default()
    }

    pub fn user_model(&self, name: &str) -> Option<&UserModel> {
        self.models.iter().find(|m| m.name == name)
    }

    /// A key in a file that other users can read is no secret: say so (it still works).
    fn warn_if_keys_readable(&mut self, path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        if !self.remotes.iter().any(|r| r.api_key.is_some()) {
            return;
        }
        let mode = std::fs::metadata(path).map(|m| m.permissions().mode());
        if mode.is_ok_and(|m| m & 0o077 != 0) {
            self.warnings.push(format!(
                "{} holds an API key but other users can read it: run `chmod 600 {}` \
                 (or use api_key_env)",
                path.display(),
                path.display()
            ));
        }
    }
}

fn validate_remote(r: &RemoteConfig, before: &[RemoteConfig], origin: &Path) -> Result<()> {
    let bad = |what: String| Err(anyhow!("{}: remote `{}` {what}", origin.display(), r.name));
    if r.name.is_empty() || r.name.contains('/') || r.name.contains(char::is_whitespace) {
        return bad("needs a name without slashes or spaces".into());
    }
    if before.iter().any(|b| b.name == r.name) {
        return bad("is named twice".into());
    }
    let Some((scheme, rest)) = r.url.split_once("://") else {
        return bad(format!("has url {:?}: expected http://HOST:PORT/v1", r.url));
    };
    if scheme != "http" && scheme != "https" {
        return bad(format!("has url {:?}: only http and https work", r.url));
    }
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.is_empty() {
        return bad(format!("has url {:?} without a host", r.url));
    }
    if authority.contains('@') {
        // A key in the URL would show wherever the URL does: it belongs in api_key_env.
        return bad("has credentials in its url: put the key in api_key_env".into());
    }
    if r.stall_timeout_s == Some(0) {
        return bad("needs stall_timeout_s of at least 1".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config> {
        Config::parse(text, Path::new("/home/u/.config/taper/config.toml"))
    }

    #[test]
    fn the_example_config_parses_and_sets_every_key() {
        let text = include_str!("../config.example.toml");
        let c = parse(text).unwrap();
        assert!(c.default_model.is_some() && c.system_prompt.is_some());
        assert!(c.context_size.is_some() && c.threads.is_some() && c.max_tokens.is_some());
        assert!(c.models_dir.is_some() && c.sampling.temperature.is_some());
        assert_eq!(c.models.len(), 2);
        assert_eq!(c.draft_models.len(), 2);
        assert_eq!(c.remotes.len(), 2);
        let gpu = &c.remotes[0];
        assert!(gpu.api_key_env.is_some() && gpu.models.is_some() && gpu.stall_timeout_s.is_some());
        assert_eq!(c.remotes[1].kind, Some(RemoteKind::Ollama));
    }

    #[test]
    fn a_remote_needs_a_plain_name_and_an_http_url_without_credentials() {
        let remote = |body: &str| parse(&format!("[[remotes]]\n{body}\n"));
        let err = |body: &str| remote(body).unwrap_err().to_string();
        assert!(remote("name = \"a\"\nurl = \"https://h/v1\"").is_ok());
        assert!(err("name = \"a/b\"\nurl = \"http://h\"").contains("without slashes"));
        assert!(err("name = \"a\"\nurl = \"h:8080\"").contains("expected http://"));
        assert!(err("name = \"a\"\nurl = \"ftp://h\"").contains("only http"));
        assert!(err("name = \"a\"\nurl = \"http://k:s@h\"").contains("api_key_env"));
        assert!(err("name = \"a\"\nurl = \"http://h\"\nkind = \"grpc\"").contains("kind"));
        let twice = "[[remotes]]\nname = \"a\"\nurl = \"http://h\"\n";
        let e = parse(&format!("{twice}{twice}")).unwrap_err().to_string();
        assert!(e.contains("named twice"), "{e}");
    }

    #[test]
    fn a_key_in_a_file_others_can_read_is_warned_about() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let text = "[[remotes]]\nname = \"a\"\nurl = \"http://h\"\napi_key = \"sk-1\"\n";
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let open = Config::load(&path, true).unwrap();
        assert!(
            open.warnings[0].contains("chmod 600"),
            "{:?}",
            open.warnings
        );
        assert!(!open.warnings[0].contains("sk-1"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Config::load(&path, true).unwrap().warnings.is_empty());
    }

    #[test]
    fn an_empty_file_is_all_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.sampling(), SamplingParams::default());
        assert_eq!(c.context_size(), DEFAULT_CONTEXT_SIZE);
    }

    #[test]
    fn the_file_overrides_built_in_sampling_defaults() {
        let c = parse("[sampling]\ntemperature = 0.2\nseed = 7\n").unwrap();
        let s = c.sampling();
        assert_eq!(s.temperature, 0.2);
        assert_eq!(s.seed, Some(7));
        assert_eq!(s.top_k, SamplingParams::default().top_k);
    }

    #[test]
    fn keeping_no_model_loaded_is_refused_with_the_least_there_is() {
        let err = parse("keep_loaded = 0\n").unwrap_err().to_string();
        assert!(err.contains("`keep_loaded` must be at least 1"), "{err}");
        assert_eq!(parse("keep_loaded = 1\n").unwrap().keep_loaded(), 1);
        assert_eq!(parse("").unwrap().keep_loaded(), DEFAULT_KEEP_LOADED);
    }

    #[test]
    fn a_wrong_type_names_file_line_and_expectation() {
        let err = parse("context_size = 1024\n\n[sampling]\ntemperature = \"hot\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("config.toml"), "{err}");
        assert!(err.contains("line 4"), "{err}");
        assert!(err.contains("temperature"), "{err}");
        assert!(err.contains("expected"), "{err}");
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_it() {
        let err = parse("temprature = 0.5\n").unwrap_err().to_string();
        assert!(
            err.contains("temprature") && err.contains("line 1"),
            "{err}"
        );
    }

    #[test]
    fn out_of_range_values_say_what_is_expected() {
        let err = parse("[sampling]\ntop_p = 3.0\n").unwrap_err().to_string();
        assert!(
            err.contains("sampling.top_p") && err.contains("from 0 to 1"),
            "{err}"
        );
    }

    #[test]
    fn a_user_model_needs_a_path_or_a_repo_and_file() {
        let err = parse("[[models]]\nname = \"x\"\nrepo = \"a/b\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("model `x`"), "{err}");
    }

    #[test]
    fn a_missing_optional_file_is_the_empty_config() {
        let c = Config::load(Path::new("/nonexistent/config.toml"), false).unwrap();
        assert_eq!(c, Config::default());
        assert!(Config::load(Path::new("/nonexistent/config.toml"), true).is_err());
    }

    #[test]
    fn remote_model_names_split_at_the_first_slash() {
        let config = Config {
            remotes: vec![RemoteConfig::quick("gpu", "http://h:8000/v1")],
            ..Config::default()
        };
        let t = config.find_target("gpu/Qwen/Qwen3-8B").unwrap();
        assert_eq!(
            (t.remote.name.as_str(), t.model.as_str()),
            ("gpu", "Qwen/Qwen3-8B")
        );
        assert!(config.find_target("gpu/").is_none());
        assert!(config.find_target("other/m").is_none());
        assert!(config.find_target("SmolLM2").is_none());
    }
}
