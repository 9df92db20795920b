//! Which models this machine has: `.gguf` files in the models directory, the config's own
//! models, and catalogue entries already in the Hugging Face cache, each described from its
//! GGUF header alone (milliseconds, however large the file).

pub mod listing;
pub mod pull;
mod resolve;

pub use resolve::{paired_draft, resolve};

use crate::catalog::{self, CatalogEntry};
use crate::config::Config;
use crate::engine::gguf::GgufHeader;
use crate::engine::model::Arch;
use crate::hub::{HubConfig, HubFile};
use crate::paths;
use std::path::{Path, PathBuf};

/// What the header says about a model file.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSummary {
    pub architecture: String,
    pub quantization: String,
    pub parameters: u64,
    pub context_length: Option<u64>,
    pub has_chat_template: bool,
    pub file_size: u64,
    /// Why taper cannot run it, if it cannot.
    pub unsupported: Option<String>,
}

impl ModelSummary {
    pub fn read(path: &Path) -> Result<Self, String> {
        let header = GgufHeader::read(path).map_err(|e| e.problem)?;
        let architecture = header.architecture().unwrap_or("unknown").to_string();
        let unsupported = Arch::from_name(&architecture).is_none().then(|| {
            format!(
                "architecture {architecture:?} is not supported (taper runs {})",
                Arch::SUPPORTED.join(", ")
            )
        });
        Ok(Self {
            context_length: header.get_u64(&header.arch_key("context_length")),
            has_chat_template: header.get_str("tokenizer.chat_template").is_some(),
            quantization: header.quantization(),
            parameters: header.parameter_count(),
            file_size: header.file_size,
            architecture,
            unsupported,
        })
    }
}

/// A model file on this machine.
#[derive(Debug, Clone)]
pub struct LocalModel {
    pub name: String,
    pub path: PathBuf,
    /// The header's facts, or why it could not be read (a broken file is listed, not skipped).
    pub summary: Result<ModelSummary, String>,
    pub catalog: Option<&'static CatalogEntry>,
    /// From a config `[[models]]` entry.
    pub tokenizer: Option<PathBuf>,
    pub chat_template: Option<String>,
}

impl LocalModel {
    pub fn describe(name: String, path: PathBuf) -> Self {
        Self {
            summary: ModelSummary::read(&path),
            name,
            path,
            catalog: None,
            tokenizer: None,
            chat_template: None,
        }
    }
}

/// The models directory the config names, else the default one.
pub fn models_dir(config: &Config) -> PathBuf {
    config
        .models_dir
        .as_deref()
        .map(paths::expand_home)
        .unwrap_or_else(paths::models_dir)
}

/// Every local model: the models directory, the config's models with a path or a cached hub
/// file, and catalogue entries in the hub cache.
pub fn discover(config: &Config, hub: &HubConfig) -> Vec<LocalModel> {
    let mut found: Vec<LocalModel> = paths::local_models(&models_dir(config))
        .into_iter()
        .map(|path| {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            LocalModel::describe(name, path)
        })
        .collect();
    for user in &config.models {
        let path = match (&user.path, &user.repo, &user.file) {
            (Some(path), _, _) => Some(paths::expand_home(path)),
            (None, Some(repo), Some(file)) => HubFile::new(repo, file).cached(hub),
            _ => None,
        };
        if let Some(path) = path {
            let mut model = LocalModel::describe(user.name.clone(), path);
            model.tokenizer = user.tokenizer.clone();
            model.chat_template = user.chat_template.clone();
            found.push(model);
        }
    }
    for entry in catalog::entries() {
        if let Some(path) = HubFile::new(&entry.repo, &entry.file).cached(hub) {
            let mut model = LocalModel::describe(entry.name.clone(), path);
            model.catalog = Some(entry);
            found.push(model);
        }
    }
    found
}

/// Where a catalogue entry's file is, when it has been downloaded.
pub fn catalog_path(entry: &CatalogEntry, hub: &HubConfig) -> Option<PathBuf> {
    HubFile::new(&entry.repo, &entry.file).cached(hub)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_file_is_described_with_its_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.gguf");
        std::fs::write(&path, b"GGUF\x03\0\0\0").unwrap();
        let model = LocalModel::describe("broken".into(), path);
        let problem = model.summary.unwrap_err();
        assert!(problem.contains("truncated"), "{problem}");
    }

    #[test]
    fn the_models_directory_is_listed_with_broken_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("junk.gguf"), b"nope").unwrap();
        let config = Config {
            models_dir: Some(dir.path().to_path_buf()),
            ..Config::default()
        };
        let hub = HubConfig {
            endpoint: "http://127.0.0.1:1".into(),
            cache_dir: dir.path().join("hub"),
            token: None,
            offline: true,
        };
        let found = discover(&config, &hub);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "junk");
        assert!(found[0].summary.is_err());
    }
}
