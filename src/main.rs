//! The `taper` binary: parse the command line, run, and turn any error into one clear line.

use clap::Parser;

fn main() {
    let cli = taper::cli::Cli::parse();
    if let Err(error) = taper::cli::run(cli) {
        eprintln!("taper: {error:#}");
        std::process::exit(1);
    }
}
