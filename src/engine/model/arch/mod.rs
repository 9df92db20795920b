//! The architectures taper runs: the shape read from GGUF metadata ([`config`]) and, per
//! architecture, one row of the recipe table ([`recipe`]) the decoder follows.

pub mod config;
pub mod recipe;

pub use config::{ModelConfig, RopeConfig};
pub use recipe::{Activation, Arch, FfnStorage, Recipe, RECIPES};
