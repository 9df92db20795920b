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
            let local = crate::models::discover(config, &hub);
            print!("{}", crate::models::listing::render(&local, &hub));
        }
        Some(ModelsAction::Pull { name }) => {
            let path = crate::models::pull::pull(&name, config)?;
            println!("{}", path.display());
        }
    }
    Ok(())
}
