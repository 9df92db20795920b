//! Which file a model argument means (`-m`, or the config's default model): a path, a file in
//! the models directory, a model the config names, or a catalogue model already downloaded.

use crate::config::{Config, UserModel};
use crate::paths;
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

/// The model file for `arg` (or the config's default model), and the config's extras for it.
pub fn resolve(arg: Option<&str>, config: &Config) -> Result<(PathBuf, Option<UserModel>)> {
    let name = arg.or(config.default_model.as_deref());
    let hub = crate::hub::HubConfig::from_env();
    if let Some(user) = name.and_then(|n| config.user_model(n)) {
        let path = match (&user.path, &user.repo, &user.file) {
            (Some(path), _, _) => paths::expand_home(path),
            (None, Some(repo), Some(file)) => crate::hub::HubFile::new(repo, file)
                .cached(&hub)
                .ok_or_else(|| not_downloaded(&user.name))?,
            _ => bail!("model {:?} in the config has no path", user.name),
        };
        return Ok((path, Some(user.clone())));
    }
    let dir = super::models_dir(config);
    match paths::resolve_model(name, &dir) {
        Ok(path) => Ok((path, None)),
        // Not a file and not in the models directory: perhaps a catalogue name.
        Err(err) => match name.and_then(crate::catalog::find) {
            Some(entry) if !entry.supported => {
                bail!(
                    "{} can't run in taper yet: {}",
                    entry.name,
                    entry.unsupported_reason
                )
            }
            Some(entry) => super::catalog_path(entry, &hub)
                .map(|path| (path, None))
                .ok_or_else(|| not_downloaded(&entry.name)),
            None => Err(err),
        },
    }
}

/// The draft model the config pairs with the model at `target` under `[draft_models]`, if
/// any: a key naming the same file (however it is named) gives its value.
pub fn paired_draft(target: &Path, config: &Config) -> Result<Option<PathBuf>> {
    let target = same_file_key(target);
    for (model, draft) in &config.draft_models {
        let Ok((path, _)) = resolve(Some(model), config) else {
            continue; // A pair for a model not here is no concern of this one.
        };
        if same_file_key(&path) == target {
            let (draft_path, _) = resolve(Some(draft), config)
                .with_context(|| format!("draft model {draft:?} for {model:?} in the config"))?;
            return Ok(Some(draft_path));
        }
    }
    Ok(None)
}

/// A path to compare files by: the canonical one where the file exists.
fn same_file_key(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn not_downloaded(name: &str) -> anyhow::Error {
    anyhow!(
        "{name} is not downloaded yet: run `taper models pull {name}` (or pass a local .gguf path)"
    )
}
