//! `taper models` (the catalogue, local models and the repack cache's size), `taper models
//! pull NAME` and `taper models cache [--prune]`.

use crate::config::Config;
use crate::engine::model::weights::packed_cache::store;
use crate::paths;
use crate::stats::human_bytes;
use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    pub action: Option<ModelsAction>,
}

#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Download a catalogue model (or a config model with repo and file) into the hub cache.
    Pull { name: String },
    /// List the repack cache's files (each model's matrices in the layout this CPU's kernels
    /// read, kept so that later loads need not repack them), or delete them with --prune.
    Cache {
        /// Delete every file in the repack cache (each model is repacked, and cached again,
        /// at its next load).
        #[arg(long)]
        prune: bool,
    },
}

pub(super) fn models(args: ModelsArgs, config: &Config) -> Result<()> {
    match args.action {
        None => {
            let hub = crate::hub::HubConfig::from_env();
            // The remotes are asked while the local headers are read.
            let remotes = config.remotes();
            let listing = std::thread::spawn(move || crate::remote::list::list_all(&remotes));
            let local = crate::models::discover(config, &hub);
            print!("{}", crate::models::listing::render(&local, &hub));
            let listings = listing.join().unwrap_or_default();
            print!("{}", crate::models::listing::render_remotes(&listings));
            println!("\n{}", cache_summary(config));
        }
        Some(ModelsAction::Cache { prune: true }) => {
            let dir = paths::repack_cache_dir();
            let (files, bytes) = store::prune(&dir)?;
            println!(
                "Removed {files} file{} ({}) from the repack cache in {}.",
                if files == 1 { "" } else { "s" },
                human_bytes(bytes),
                dir.display()
            );
        }
        Some(ModelsAction::Cache { prune: false }) => {
            let dir = paths::repack_cache_dir();
            for file in store::list(&dir) {
                let name = file.path.file_name().unwrap_or_default().to_string_lossy();
                println!("{:>9}  {name}", human_bytes(file.bytes));
            }
            println!("{}", cache_summary(config));
        }
        Some(ModelsAction::Pull { name }) => {
            let path = crate::models::pull::pull(&name, config)?;
            println!("{}", path.display());
        }
    }
    Ok(())
}

/// One line: where the repack cache is, what it takes, and whether it is on.
fn cache_summary(config: &Config) -> String {
    let dir = paths::repack_cache_dir();
    let state = match config.repack_cache_dir() {
        Some(_) => "",
        None => "off (repack_cache = false in the config), ",
    };
    format!(
        "Repack cache: {state}{} in {}; `taper models cache --prune` frees it.",
        human_bytes(store::total_bytes(&dir)),
        dir.display()
    )
}
