//! `taper sessions search TEXT`: every saved conversation that mentions TEXT, newest first,
//! with a line of context per matching message. Like grep, it exits 1 when nothing matches.

use crate::sessions::search::{self, Found, Snippet};
use crate::sessions::{sessions_dir, store, time::format_utc, Session};
use anyhow::{bail, Result};
use std::io::{IsTerminal, Write};

/// Matching messages shown per session; the rest are counted.
const HITS_PER_SESSION: usize = 3;

pub fn search(text: &str) -> Result<()> {
    let needle = text.to_lowercase();
    if needle.trim().is_empty() {
        bail!("nothing to search for: give a word or a phrase");
    }
    let dir = sessions_dir();
    let mut found: Vec<(Heading, Found)> = Vec::new();
    // One file at a time, keeping only what is shown of the sessions that match.
    for path in store::paths(&dir) {
        match store::load(&path) {
            Ok(session) => {
                if let Some(f) = search::search(&session, &needle, HITS_PER_SESSION) {
                    found.push((Heading::of(&session), f));
                }
            }
            Err(e) => eprintln!("taper: skipped {e:#}"),
        }
    }
    if found.is_empty() {
        bail!(
            "no saved conversation in {} mentions {text:?}",
            dir.display()
        );
    }
    found.sort_by(|(a, _), (b, _)| b.updated_at.cmp(&a.updated_at).then(b.id.cmp(&a.id)));
    let out = std::io::stdout();
    let highlight = out.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = out.lock();
    for (i, (heading, f)) in found.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{}  {}  (updated {})",
            heading.id,
            heading.title,
            format_utc(heading.updated_at)
        )?;
        for hit in &f.hits {
            writeln!(out, "  {}: {}", hit.who, shown(&hit.snippet, highlight))?;
        }
        if f.more > 0 {
            writeln!(out, "  ({} more)", f.more)?;
        }
    }
    Ok(())
}

/// The first line of a matching session's block.
struct Heading {
    id: String,
    title: String,
    updated_at: u64,
}

impl Heading {
    fn of(session: &Session) -> Self {
        Self {
            id: session.id.clone(),
            title: session.display_title(),
            updated_at: session.updated_at,
        }
    }
}

/// The snippet, its match in bold reverse video on a terminal.
fn shown(snippet: &Snippet, highlight: bool) -> String {
    if !highlight {
        return snippet.plain();
    }
    format!(
        "{}\x1b[1;7m{}\x1b[0m{}",
        snippet.before, snippet.matched, snippet.after
    )
}
