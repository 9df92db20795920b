//! The full-screen chat (`taper`, `taper chat`): a client of the engine worker, built as
//! docs/design.md says: one tokio loop with the effect runner ([`app`]), a pure [`update`] that
//! turns [`msg::Msg`]s into state changes and [`msg::Effect`]s, the table of every key
//! ([`keys`]) and the [`keymap`] that reads it, the [`state`] (one file per concern), and pure
//! rendering ([`ui`], one file per pane). The command line is `cli::chat`'s: it hands this
//! module an [`app::AppConfig`], and nothing here reads arguments.
//!
//! Speed: candle's matmul threads spin while they wait for each other, so on a small machine
//! every moment our thread takes a core from them stalls the model (one busy thread once cut
//! decoding from 54 to 4 tok/s). The UI thread therefore sleeps unless input or a due frame
//! wakes it; while an answer streams it collects tokens once a frame instead of waking for
//! each; it draws at most [`DEFAULT_FPS`] frames a second, never redraws when idle, and
//! caches wrapped lines. Inference threads default to the physical cores, as for `taper ask`
//! (on 2 cores: 59 tok/s with 2 threads against 43 with 1, and the TUI within 4% of `ask`),
//! and candle's barrier spin limit stays at its default (lowering it slowed decoding).

pub mod app;
pub mod commands;
pub mod files;
pub mod keymap;
pub mod keys;
pub mod line_edit;
pub mod msg;
pub mod scan;
pub mod state;
pub mod terminal;
pub mod ui;
pub mod update;

pub use msg::{Effect, Msg, SessionEffect, SessionMsg};
pub use state::State;
pub use update::update;

use anyhow::Result;

/// Frames drawn per second at most while something changes. Text appearing 15 times a second
/// reads as smooth streaming, and each frame costs the model a little CPU.
pub const DEFAULT_FPS: u32 = 15;

/// Runs the chat until the user quits.
pub fn run(config: app::AppConfig) -> Result<()> {
    // One thread for the UI: a multi-threaded runtime would add idle workers that compete
    // with the model's threads for the cores.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(app::run(config))
}
