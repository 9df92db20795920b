//! How many compute threads the engine uses (`--threads`): set once, before any thread pool
//! starts, for every client of the engine (the chat, `ask`, `bench`).

use anyhow::{bail, Result};

/// Sets candle's compute threads; must run before the engine computes anything.
pub fn set_threads(threads: Option<usize>) -> Result<()> {
    if let Some(n) = threads {
        if n == 0 {
            bail!("--threads must be at least 1");
        }
        let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
        if n > cpus {
            eprintln!(
                "taper: {n} compute threads on {cpus} logical CPUs: the extra threads only wait \
                 their turn, which makes every step slower"
            );
        }
        // candle reads these once, when its thread pools start.
        std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    }
    Ok(())
}
