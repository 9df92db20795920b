//! `taper sessions` (the saved conversations: list; search, rename and rm in their own
//! files) and `taper export SESSION` (Markdown or JSON).

use crate::sessions::{export, sessions_dir, store, time::format_utc};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub action: Option<SessionsAction>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// List the saved conversations, newest first (the default).
    List,
    /// Find the conversations whose title or messages contain TEXT (ignoring case), newest
    /// first, with a line of context for each match; exits 1 when none does.
    Search {
        /// The words to look for, as one text (several arguments are joined by spaces).
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// Give a saved conversation a new title (an empty one goes back to the first question).
    Rename {
        /// A session id, a unique prefix of one, or a session file.
        session: String,
        /// The new title (several arguments are joined by spaces).
        #[arg(required = true, num_args = 1..)]
        title: Vec<String>,
    },
    /// Delete a saved conversation's file, after asking (or with --yes).
    Rm {
        /// A session id, a unique prefix of one, or a session file.
        session: String,
        /// Delete without asking (needed when stdin is not a terminal).
        #[arg(short, long)]
        yes: bool,
    },
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A session id, a unique prefix of one, or a session file.
    pub session: String,
    /// A readable Markdown transcript (the default).
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// The raw record, as saved.
    #[arg(long)]
    pub json: bool,
    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn sessions(args: SessionsArgs) -> Result<()> {
    match args.action.unwrap_or(SessionsAction::List) {
        SessionsAction::List => list(),
        SessionsAction::Search { text } => super::sessions_find::search(&text.join(" ")),
        SessionsAction::Rename { session, title } => {
            super::sessions_edit::rename(&session, &title.join(" "))
        }
        SessionsAction::Rm { session, yes } => super::sessions_edit::remove(&session, yes),
    }
}

fn list() -> Result<()> {
    let dir = sessions_dir();
    let listed = store::list(&dir);
    let mut out = std::io::stdout().lock();
    if listed.is_empty() {
        writeln!(out, "No saved sessions in {}.", dir.display())?;
        return Ok(());
    }
    let id_width = listed.iter().map(|l| l.id.len()).max().unwrap_or(2).max(2);
    writeln!(
        out,
        "{:<id_width$}  {:<20}  {:>4}  {:<48}  TITLE",
        "ID", "UPDATED", "MSGS", "MODELS"
    )?;
    for l in &listed {
        match &l.summary {
            Ok(s) => writeln!(
                out,
                "{:<id_width$}  {:<20}  {:>4}  {:<48}  {}",
                l.id,
                format_utc(s.updated_at),
                s.messages,
                clip(&s.models.join(", "), 48),
                s.title
            )?,
            Err(why) => writeln!(
                out,
                "{:<id_width$}  unreadable: {why} ({})",
                l.id,
                l.path.display()
            )?,
        }
    }
    writeln!(out, "\n{} in {}", plural(listed.len()), dir.display())?;
    Ok(())
}

fn plural(n: usize) -> String {
    match n {
        1 => "1 session".to_string(),
        n => format!("{n} sessions"),
    }
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut s: String = text.chars().take(width - 1).collect();
    s.push('…');
    s
}

pub fn export(args: ExportArgs) -> Result<()> {
    let path = store::resolve(&sessions_dir(), Some(&args.session))?;
    // Loaded (and so checked) either way: a file this taper cannot read is not exported.
    let session = store::load(&path)?;
    let bytes = if args.json {
        std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?
    } else {
        export::to_markdown(&session).into_bytes()
    };
    match &args.output {
        Some(file) => {
            if file.as_path() == path.as_path() {
                bail!("refusing to export a session over its own file");
            }
            std::fs::write(file, &bytes)
                .with_context(|| format!("cannot write {}", file.display()))?;
            eprintln!("Wrote {}", file.display());
        }
        None => std::io::stdout().lock().write_all(&bytes)?,
    }
    Ok(())
}
