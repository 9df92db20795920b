//! What is generated from the one clap definition: shell completion scripts and the man page,
//! so that neither can fall behind the flags.

use super::Cli;
use anyhow::{Context, Result};
use clap::CommandFactory;
use std::io::Write;

pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut command = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut command, "taper", &mut out);
    out.flush().context("cannot write the completion script")
}

pub fn man_page() -> Result<()> {
    let page = clap_mangen::Man::new(Cli::command());
    let mut out = std::io::stdout().lock();
    page.render(&mut out).context("cannot write the man page")?;
    out.flush().context("cannot write the man page")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap_complete::Shell;

    fn script(shell: Shell) -> String {
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "taper", &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_shell_gets_every_command() {
        for shell in [
            Shell::Bash,
            Shell::Zsh,
            Shell::Fish,
            Shell::Elvish,
            Shell::PowerShell,
        ] {
            let text = script(shell);
            for command in ["ask", "serve", "bench", "completions", "temperature"] {
                assert!(text.contains(command), "{shell}: {command}");
            }
        }
    }

    #[test]
    fn bash_loads_the_script() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("taper.bash");
        std::fs::write(&path, script(Shell::Bash)).unwrap();
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("source {} && complete -p taper", path.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("_taper taper"));
    }

    #[test]
    fn the_man_page_names_the_commands_and_flags() {
        let mut out = Vec::new();
        clap_mangen::Man::new(Cli::command())
            .render(&mut out)
            .unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(
            page.starts_with(".ie") && page.contains(".TH taper 1"),
            "{page}"
        );
        assert!(page.contains("taper\\-serve") || page.contains("serve"));
        assert!(page.contains("\\-\\-config"));
    }
}
