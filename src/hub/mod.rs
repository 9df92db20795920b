//! Models from the Hugging Face hub: where the standard cache keeps them, and downloads into
//! it with progress, cancel and resume.
//!
//! The cache is the one other tools use (`$HF_HOME/hub`, default `~/.cache/huggingface/hub`),
//! so a file another program downloaded is found, and ours are found by them.

mod download;

pub use download::download;

use std::path::PathBuf;

/// Where and how to reach the hub; from the environment like Hugging Face's own tools.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// `HF_ENDPOINT`, default `https://huggingface.co`.
    pub endpoint: String,
    /// `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`.
    pub cache_dir: PathBuf,
    /// `HF_TOKEN`, else the token file `huggingface-cli login` writes.
    pub token: Option<String>,
    /// `HF_HUB_OFFLINE`: only the cache is used.
    pub offline: bool,
}

impl HubConfig {
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let hf_home = var("HF_HOME").map(PathBuf::from).unwrap_or_else(|| {
            directories::BaseDirs::new()
                .map(|b| b.home_dir().join(".cache/huggingface"))
                .unwrap_or_else(|| PathBuf::from(".cache/huggingface"))
        });
        let cache_dir = var("HF_HUB_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| hf_home.join("hub"));
        let token = var("HF_TOKEN").or_else(|| {
            std::fs::read_to_string(hf_home.join("token"))
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        });
        let offline = var("HF_HUB_OFFLINE").is_some_and(|v| {
            matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
        });
        Self {
            endpoint: var("HF_ENDPOINT")
                .unwrap_or_else(|| "https://huggingface.co".into())
                .trim_end_matches('/')
                .to_string(),
            cache_dir,
            token,
            offline,
        }
    }
}

/// One file of a hub repository at a revision (a branch, tag or commit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubFile {
    pub repo: String,
    pub file: String,
    pub revision: String,
}

impl HubFile {
    pub fn new(repo: &str, file: &str) -> Self {
        Self {
            repo: repo.into(),
            file: file.into(),
            revision: "main".into(),
        }
    }

    fn cache_repo(&self, config: &HubConfig) -> hf_hub::CacheRepo {
        hf_hub::Cache::new(config.cache_dir.clone()).repo(hf_hub::Repo::with_revision(
            self.repo.clone(),
            hf_hub::RepoType::Model,
            self.revision.clone(),
        ))
    }

    /// The repo's folder in the cache (`models--org--name`).
    fn repo_dir(&self, config: &HubConfig) -> PathBuf {
        config
            .cache_dir
            .join(format!("models--{}", self.repo.replace('/', "--")))
    }

    /// The cached file, if a complete copy is there (found the way every HF tool finds it).
    pub fn cached(&self, config: &HubConfig) -> Option<PathBuf> {
        if let Some(path) = self.cache_repo(config).get(&self.file) {
            return Some(path);
        }
        // A revision that is itself a commit has no ref file.
        let direct = self
            .repo_dir(config)
            .join("snapshots")
            .join(&self.revision)
            .join(&self.file);
        direct.is_file().then_some(direct)
    }
}

/// Why a download did not produce a file; each says what the user can do instead.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("the download of {0} was cancelled (it resumes where it stopped next time)")]
    Cancelled(String),
    #[error("{repo} is gated or private: accept its licence on the hub and set HF_TOKEN to a token with access, or use a local .gguf file (`taper models` lists what is local)")]
    NeedsToken { repo: String },
    #[error("the token in HF_TOKEN has no access to {repo}: accept the model's licence on its hub page with that account, or use a local .gguf file")]
    Forbidden { repo: String },
    #[error("{repo} has no file {file} (or the repo does not exist): check the name, or use a local .gguf file (`taper models` lists what is local)")]
    NotFound { repo: String, file: String },
    #[error("cannot reach the hub at {endpoint} ({detail}): check the network or HF_ENDPOINT, or use a local .gguf file (`taper models` lists what is local)")]
    Unreachable { endpoint: String, detail: String },
    #[error("HF_HUB_OFFLINE is set and {repo}/{file} is not in the cache at {cache}: unset HF_HUB_OFFLINE to download it, or use a local .gguf file")]
    Offline {
        repo: String,
        file: String,
        cache: String,
    },
    #[error("the hub answered {repo}/{file} unexpectedly: {detail}")]
    Protocol {
        repo: String,
        file: String,
        detail: String,
    },
    #[error("cannot write the download of {file} to {dir}: {source}")]
    Io {
        file: String,
        dir: String,
        source: std::io::Error,
    },
}
