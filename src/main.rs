//! The `taper` binary: parse the command line, run, and turn any error into one clear line.

use clap::Parser;

fn main() {
    let cli = taper::cli::Cli::parse();
    if let Err(error) = taper::cli::run(cli) {
        // The reader of our output went away (`taper ask … | head`): as Unix tools do, stop
        // quietly; there is no one left to tell.
        let reader_gone = error.chain().any(|e| {
            e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        });
        if reader_gone {
            std::process::exit(0);
        }
        eprintln!("taper: {error:#}");
        std::process::exit(1);
    }
}
