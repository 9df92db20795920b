//! `taper sessions rename ID TITLE` and `taper sessions rm ID [--yes]`: the sessions overlay's
//! rename and delete from the command line, through the same atomic store. A file from a
//! newer taper is never rewritten; deleting one is allowed, since deleting is what was asked.

use crate::sessions::{sessions_dir, store};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

pub fn rename(arg: &str, title: &str) -> Result<()> {
    let path = resolve(arg)?;
    // `store::rename` reads the file first, so one it cannot read is refused, not replaced.
    store::rename(&path, title).context("not renamed")?;
    let shown = store::load(&path)
        .map(|s| s.display_title())
        .unwrap_or_else(|_| title.trim().to_string());
    println!("Renamed {} to “{shown}”", id_of(&path));
    Ok(())
}

pub fn remove(arg: &str, yes: bool) -> Result<()> {
    let dir = sessions_dir();
    let path = resolve(arg)?;
    let id = id_of(&path);
    let what = match store::load(&path) {
        Ok(session) => format!("\"{}\" ({id})", session.display_title()),
        // A path can name any file: only the sessions directory's own are deleted unread.
        Err(e) if !inside(&path, &dir) => bail!(
            "not deleting a file outside {} that is not a session taper can read: {e:#}",
            dir.display()
        ),
        Err(e) => format!("{id}, which taper cannot read ({e:#})"),
    };
    if !yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            bail!("not deleting {id} without asking, and stdin is not a terminal to ask on: pass --yes to delete it");
        }
        let question = format!("Delete {what}?");
        if !confirm(stdin.lock(), std::io::stderr().lock(), &question)? {
            eprintln!("Kept {id}.");
            return Ok(());
        }
    }
    store::delete(&path)?;
    println!("Deleted {}", path.display());
    Ok(())
}

/// The session file for an id, a prefix or a path; never "the latest" for an empty one.
fn resolve(arg: &str) -> Result<std::path::PathBuf> {
    if arg.trim().is_empty() {
        bail!("which session? give its id, a unique prefix of it, or its file");
    }
    store::resolve(&sessions_dir(), Some(arg))
}

fn id_of(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Whether `path` is a file directly in `dir` (after following links on both).
fn inside(path: &Path, dir: &Path) -> bool {
    let parent = path.canonicalize().ok();
    let parent = parent.as_deref().and_then(Path::parent);
    match (parent, dir.canonicalize()) {
        (Some(parent), Ok(dir)) => parent == dir,
        _ => false,
    }
}

/// Asks `question [y/N]` on `ask` and reads the answer from `answer`: yes only for y or yes.
fn confirm(mut answer: impl BufRead, mut ask: impl Write, question: &str) -> Result<bool> {
    write!(ask, "{question} [y/N] ")?;
    ask.flush()?;
    let mut line = String::new();
    answer
        .read_line(&mut line)
        .context("cannot read the answer")?;
    Ok(matches!(line.trim().to_lowercase().as_str(), "y" | "yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(input: &str) -> (bool, String) {
        let mut asked = Vec::new();
        let yes = confirm(input.as_bytes(), &mut asked, "Delete \"x\" (id)?").unwrap();
        (yes, String::from_utf8(asked).unwrap())
    }

    #[test]
    fn only_y_or_yes_confirms() {
        for input in ["y\n", "Y\n", "yes\n", " YES \n"] {
            assert!(answered(input).0, "{input:?}");
        }
        for input in ["", "\n", "n\n", "no\n", "yep\n", "maybe y\n"] {
            assert!(!answered(input).0, "{input:?}");
        }
        assert_eq!(answered("y\n").1, "Delete \"x\" (id)? [y/N] ");
    }

    #[test]
    fn only_files_directly_in_the_directory_are_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.json");
        std::fs::write(&file, b"{").unwrap();
        assert!(inside(&file, dir.path()));
        assert!(!inside(&file, &dir.path().join("sub")));
        assert!(!inside(&dir.path().join("missing.json"), dir.path()));
    }
}
