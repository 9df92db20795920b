//! Finding the models the picker offers: the `.gguf` files in the models directory and the
//! config's user models with a local path, each described from its header alone.

use super::state::ModelEntry;
use crate::config::UserModel;
use crate::engine::gguf::GgufHeader;
use crate::paths;
use std::path::{Path, PathBuf};

/// Where to look; cloned into the background thread that scans.
#[derive(Debug, Clone)]
pub struct ModelSources {
    pub dir: PathBuf,
    pub user_models: Vec<UserModel>,
}

/// Reads every header (milliseconds each; run it off the UI thread all the same).
pub fn scan(sources: &ModelSources) -> Vec<ModelEntry> {
    let mut entries: Vec<ModelEntry> = paths::local_models(&sources.dir)
        .into_iter()
        .map(|path| describe(&path))
        .collect();
    for user in &sources.user_models {
        let Some(path) = &user.path else { continue };
        let mut entry = describe(&paths::expand_home(path));
        entry.name = user.name.clone();
        entry.tokenizer = user.tokenizer.clone();
        entry.chat_template = user.chat_template.clone();
        entries.push(entry);
    }
    entries
}

/// A model file as the picker lists it; an unreadable header becomes the entry's problem.
pub fn describe(path: &Path) -> ModelEntry {
    let mut entry = ModelEntry::from_path(path.to_path_buf());
    match GgufHeader::read(path) {
        Ok(header) => {
            entry.architecture = header.architecture().unwrap_or("unknown").to_string();
            entry.quantization = header.quantization();
            entry.file_size = header.file_size;
            entry.parameters = header.parameter_count();
        }
        Err(e) => entry.problem = Some(e.problem),
    }
    entry
}
