//! The architectures taper runs: the shape read from GGUF metadata ([`config`]) and, per
//! architecture, one row of the recipe table ([`recipe`]) the decoder follows.

pub mod config;

pub use config::{Arch, ModelConfig, RopeConfig};
