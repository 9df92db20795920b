//! Where taper keeps its files, and how a `-m MODEL` argument becomes a file.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// `$TAPER_HOME` when set (tests use it), else the platform's data directory for taper.
pub fn data_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("TAPER_HOME") {
        return PathBuf::from(home);
    }
    directories::ProjectDirs::from("", "", "taper")
        .map(|d| d.data_dir().to_path_buf())
        .unwrap_or_else(|| PathBuf::from(".taper"))
}

/// `$TAPER_HOME/config.toml`, else the platform's config directory's.
pub fn config_file() -> PathBuf {
    if let Some(home) = std::env::var_os("TAPER_HOME") {
        return PathBuf::from(home).join("config.toml");
    }
    directories::ProjectDirs::from("", "", "taper")
        .map(|d| d.config_dir().join("config.toml"))
        .unwrap_or_else(|| PathBuf::from(".taper/config.toml"))
}

/// `~/x` as the user's home's `x`; other paths unchanged.
pub fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), directories::BaseDirs::new()) {
        (Ok(rest), Some(base)) => base.home_dir().join(rest),
        _ => path.to_path_buf(),
    }
}

/// `$TAPER_HOME/cache` when set, else the platform's cache directory for taper: what taper
/// can rebuild and a user may delete.
pub fn cache_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("TAPER_HOME") {
        return PathBuf::from(home).join("cache");
    }
    directories::ProjectDirs::from("", "", "taper")
        .map(|d| d.cache_dir().to_path_buf())
        .unwrap_or_else(|| PathBuf::from(".taper/cache"))
}

/// Where models' repacked matrices are kept between loads.
pub fn repack_cache_dir() -> PathBuf {
    cache_dir().join("repacked")
}

pub fn models_dir() -> PathBuf {
    data_dir().join("models")
}

/// The `.gguf` files in `dir`, sorted by name; a missing directory has none.
pub fn local_models(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|x| x.eq_ignore_ascii_case("gguf"))
        })
        .collect();
    found.sort();
    found
}

/// A model argument: a path to a file, or the name of a `.gguf` in `dir` (with or without the
/// extension). Without an argument: the only model in `dir`.
pub fn resolve_model(arg: Option<&str>, dir: &Path) -> Result<PathBuf> {
    let available = local_models(dir);
    let listing = || {
        if available.is_empty() {
            format!(
                "no models in {} (put a .gguf file there, or pass a path)",
                dir.display()
            )
        } else {
            let names: Vec<String> = available
                .iter()
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect();
            format!("models in {}: {}", dir.display(), names.join(", "))
        }
    };
    let Some(arg) = arg else {
        return match available.as_slice() {
            [only] => Ok(only.clone()),
            [] => bail!("no model given and {}", listing()),
            _ => bail!(
                "several models are available; choose one with -m ({})",
                listing()
            ),
        };
    };
    let as_path = PathBuf::from(arg);
    if as_path.is_file() {
        return Ok(as_path);
    }
    for candidate in [dir.join(arg), dir.join(format!("{arg}.gguf"))] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "model {arg:?} not found: not a file, and not a model name ({})",
        listing()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_resolves_with_or_without_extension() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tiny.gguf"), b"x").unwrap();
        assert_eq!(
            resolve_model(Some("tiny"), dir.path()).unwrap(),
            dir.path().join("tiny.gguf")
        );
        assert_eq!(
            resolve_model(Some("tiny.gguf"), dir.path()).unwrap(),
            dir.path().join("tiny.gguf")
        );
    }

    #[test]
    fn no_argument_picks_the_only_model() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("only.gguf"), b"x").unwrap();
        assert_eq!(
            resolve_model(None, dir.path()).unwrap(),
            dir.path().join("only.gguf")
        );
    }

    #[test]
    fn no_argument_with_several_models_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.gguf"), b"x").unwrap();
        std::fs::write(dir.path().join("b.gguf"), b"x").unwrap();
        let msg = resolve_model(None, dir.path()).unwrap_err().to_string();
        assert!(msg.contains("a, b"), "{msg}");
    }

    #[test]
    fn an_unknown_name_says_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let msg = resolve_model(Some("nope"), dir.path())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("no models in"), "{msg}");
    }
}
