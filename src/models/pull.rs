//! `taper models pull NAME`: a catalogue (or config) model into the hub cache, with a progress
//! bar. Ctrl+C stops it; the partial `.part` file is resumed by the next pull.

use crate::catalog;
use crate::config::Config;
use crate::hub::{self, HubConfig, HubFile};
use anyhow::{anyhow, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Which hub file NAME means: a catalogue entry, or a config model with `repo` and `file`.
pub fn hub_file_for(name: &str, config: &Config) -> Result<HubFile> {
    if let Some(user) = config.user_model(name) {
        if let (Some(repo), Some(file)) = (&user.repo, &user.file) {
            return Ok(HubFile::new(repo, file));
        }
        return Err(anyhow!(
            "model {name:?} in the config is a local file, nothing to pull"
        ));
    }
    let entry = catalog::lookup(name)?;
    if !entry.supported {
        return Err(anyhow!(
            "{} can't run in taper yet: {}",
            entry.name,
            entry.unsupported_reason
        ));
    }
    let mut file = HubFile::new(&entry.repo, &entry.file);
    if !entry.revision.is_empty() {
        file.revision = entry.revision.clone();
    }
    Ok(file)
}

pub fn pull(name: &str, config: &Config) -> Result<PathBuf> {
    let file = hub_file_for(name, config)?;
    let hub_config = HubConfig::from_env();
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
        )
        .map_err(|e| anyhow!("progress bar: {e}"))?
        .progress_chars("=> "),
    );
    bar.set_message(file.file.clone());
    let never = AtomicBool::new(false);
    let result = hub::download(&hub_config, &file, &never, |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let path = result?;
    Ok(path)
}
