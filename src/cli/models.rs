//! `taper models` (the catalogue and local models) and `taper models pull NAME`.

use crate::config::Config;
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
        }
        Some(ModelsAction::Pull { name }) => {
            let path = crate::models::pull::pull(&name, config)?;
            println!("{}", path.display());
        }
    }
    Ok(())
}
