//! Finding the models the picker offers: every local model (`crate::models::discover`: the
//! models directory, the config's models, catalogue files in the hub cache), then the
//! catalogue models not downloaded yet, which the picker downloads when chosen.

use super::state::picker::REMOTE;
use super::state::ModelEntry;
use crate::catalog;
use crate::config::Config;
use crate::hub::{HubConfig, HubFile};
use crate::models::{self, LocalModel, ModelSummary};
use std::path::{Path, PathBuf};

/// Where to look; cloned into the background thread that scans.
#[derive(Debug, Clone)]
pub struct ModelSources {
    pub config: Config,
    pub hub: HubConfig,
}

/// Reads every header (milliseconds each; run it off the UI thread all the same).
pub fn scan(sources: &ModelSources) -> Vec<ModelEntry> {
    let local = models::discover(&sources.config, &sources.hub);
    let mut entries: Vec<ModelEntry> = local.iter().map(entry_for).collect();
    for entry in &mut entries {
        // A pair whose draft is not here yet leaves the model without one, as if unpaired.
        entry.draft = models::paired_draft(&entry.path, &sources.config)
            .ok()
            .flatten();
    }
    for e in catalog::entries() {
        if local
            .iter()
            .any(|m| m.catalog.is_some_and(|c| c.name == e.name))
        {
            continue;
        }
        let mut entry = ModelEntry::from_path(Path::new(&e.file).to_path_buf());
        entry.name = e.name.clone();
        entry.architecture = e.architecture.clone();
        entry.quantization = e.quantization.clone();
        entry.file_size = e.size_bytes;
        if e.supported {
            let mut file = HubFile::new(&e.repo, &e.file);
            if !e.revision.is_empty() {
                file.revision = e.revision.clone();
            }
            entry.download = Some(file);
        } else {
            entry.problem = Some(format!("not supported yet: {}", e.unsupported_reason));
        }
        entries.push(entry);
    }
    entries
}

fn entry_for(model: &LocalModel) -> ModelEntry {
    let mut entry = from_summary(&model.path, &model.summary);
    entry.name = model.name.clone();
    entry.tokenizer = model.tokenizer.clone();
    entry.chat_template = model.chat_template.clone();
    entry
}

fn from_summary(path: &Path, summary: &Result<ModelSummary, String>) -> ModelEntry {
    let mut entry = ModelEntry::from_path(path.to_path_buf());
    match summary {
        Ok(s) => {
            entry.architecture = s.architecture.clone();
            entry.quantization = s.quantization.clone();
            entry.file_size = s.file_size;
            entry.parameters = s.parameters;
            entry.problem = s.unsupported.clone();
        }
        Err(problem) => entry.problem = Some(problem.clone()),
    }
    entry
}

/// Asks every remote of the config for its models (each on its own thread, with short
/// timeouts): `NAME/MODEL` entries, and one entry with the reason for a remote that did not
/// answer.
pub fn remotes(sources: &ModelSources) -> Vec<ModelEntry> {
    let remotes = sources.config.remotes();
    let mut entries = Vec::new();
    for listing in crate::remote::list::list_all(&remotes) {
        let remote = listing.remote;
        match listing.models {
            Ok(models) => entries.extend(models.into_iter().map(|m| {
                let mut entry = remote_entry(crate::remote::RemoteTarget {
                    remote: remote.clone(),
                    model: m.id,
                });
                entry.parameters = m.parameters.unwrap_or(0);
                entry
            })),
            Err(why) => {
                let mut entry = ModelEntry::from_path(PathBuf::from(format!("{}/", remote.name)));
                entry.name = remote.name.clone();
                entry.architecture = REMOTE.into();
                let why = why
                    .strip_prefix(&format!("{}: ", remote.name))
                    .unwrap_or(&why);
                entry.problem = Some(format!("unreachable: {why}"));
                entries.push(entry);
            }
        }
    }
    entries
}

/// A remote's model as the picker lists it (choosing it connects).
pub fn remote_entry(target: crate::remote::RemoteTarget) -> ModelEntry {
    let mut entry = ModelEntry::from_path(PathBuf::from(target.label()));
    entry.name = target.label();
    entry.architecture = REMOTE.into();
    entry.quantization = target.remote.host().to_string();
    entry.remote = Some(target);
    entry
}

/// A model file as the picker lists it; an unreadable header becomes the entry's problem.
pub fn describe(path: &Path) -> ModelEntry {
    from_summary(path, &ModelSummary::read(path))
}
