//! Files brought into a message: finding the `@path` mentions in the text, reading a file as
//! text (the app does it, off the UI thread), and the fenced block the model is sent.
//! Everything but [`read_text`] is pure.

use std::path::{Path, PathBuf};

/// Files larger than this are refused before reading: no small model's context holds one
/// (4 MiB of text is about a million tokens), and reading it would only stall the UI.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// Bytes looked at to tell a binary file from text.
const SNIFF_BYTES: usize = 8 << 10;

/// One `@path` in the message: where it is in the text (bytes) and the path it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub start: usize,
    pub end: usize,
    pub path: String,
}

/// The `@path` mentions of `text`: an `@` at the start or after whitespace, then a path up to
/// the next whitespace (or `@"a path with spaces"`). Punctuation that ends a sentence is not
/// part of the path (`see @notes.txt, then` names `notes.txt`). With `closed_only`, a mention
/// the text ends in is left out: it may still be being typed.
pub fn mentions(text: &str, closed_only: bool) -> Vec<Mention> {
    let mut found = Vec::new();
    let mut previous: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let starts = c == '@' && previous.is_none_or(char::is_whitespace);
        previous = Some(c);
        if !starts {
            continue;
        }
        let rest = &text[at + 1..];
        let (path, len, closed) = if let Some(quoted) = rest.strip_prefix('"') {
            match quoted.find('"') {
                Some(close) => (quoted[..close].to_string(), close + 2, true),
                None => continue,
            }
        } else {
            let word_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let word = rest[..word_len].trim_end_matches([',', ';', ':', '!', '?', ')', '.']);
            (word.to_string(), word_len, word_len < rest.len())
        };
        if path.is_empty() || path.starts_with('@') || (closed_only && !closed) {
            continue;
        }
        found.push(Mention {
            start: at,
            end: at + 1 + len.min(rest.len()),
            path,
        });
        // Skip the mention itself (a quoted one may hold an `@` after a space).
        while chars.peek().is_some_and(|(i, _)| *i < at + 1 + len) {
            previous = chars.next().map(|(_, c)| c);
        }
    }
    found
}

/// A mentioned path as a file path: `~/` is the home directory, and a relative path is the
/// working directory's.
pub fn resolve(path: &str) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => dirs_home().map_or_else(|| PathBuf::from(path), |home| home.join(rest)),
        None => PathBuf::from(path),
    }
}

fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Why a mentioned file cannot be attached, in one clear line; `Missing` is not an error
/// (an `@name` that is no file goes to the model as the text it is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotText {
    Missing,
    Refused(String),
}

/// The file's text. Directories, binary files (a NUL byte, or not UTF-8), files over
/// [`MAX_FILE_BYTES`] and unreadable ones are refused with the reason.
pub fn read_text(path: &Path) -> Result<String, NotText> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(NotText::Missing),
        Err(e) => return Err(NotText::Refused(format!("cannot be read: {}", plain(&e)))),
    };
    if meta.is_dir() {
        return Err(NotText::Refused(
            "is a directory: attach its files one by one".into(),
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(NotText::Refused(format!(
            "is too large ({}; at most {} can be attached)",
            megabytes(meta.len()),
            megabytes(MAX_FILE_BYTES)
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| NotText::Refused(format!("cannot be read: {}", plain(&e))))?;
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(NotText::Refused("is a binary file, not text".into()));
    }
    String::from_utf8(bytes).map_err(|_| NotText::Refused("is not UTF-8 text".into()))
}

/// An I/O error without its "(os error N)" tail.
fn plain(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(cut) => text[..cut].to_lowercase(),
        None => text.to_lowercase(),
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The file as the model reads it: its name on a line, then its text fenced (with a fence
/// longer than any run of backticks inside, so the text cannot close it early).
pub fn fenced(path: &str, text: &str) -> String {
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    let language = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{path}\n{fence}{language}\n{body}\n{fence}")
}

/// The mention at the cursor (byte offset), for Tab: where its path starts and the path typed
/// so far. A quoted path is completed only before its closing quote.
pub fn mention_at(text: &str, cursor: usize) -> Option<(usize, &str)> {
    let before = text.get(..cursor)?;
    let word_start = before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[word_start..];
    let path = word.strip_prefix('@')?;
    (!path.starts_with('"')).then_some((word_start + 1, path))
}

/// What Tab makes of `typed`, given the directory entries that start with its last part:
/// the longest common completion, a `/` after a unique directory, a space after a unique
/// file. None when nothing matches.
pub fn complete_path(typed: &str, candidates: &[(String, bool)]) -> Option<String> {
    let dir_part = match typed.rfind('/') {
        Some(i) => &typed[..=i],
        None => "",
    };
    match candidates {
        [] => None,
        [(name, is_dir)] => Some(format!(
            "{dir_part}{name}{}",
            if *is_dir { "/" } else { " " }
        )),
        many => {
            let mut common = many[0].0.as_str();
            for (name, _) in &many[1..] {
                let same = common
                    .char_indices()
                    .zip(name.chars())
                    .find(|((_, a), b)| a != b)
                    .map_or(common.len().min(name.len()), |((i, _), _)| i);
                common = &common[..same];
            }
            Some(format!("{dir_part}{common}"))
        }
    }
}

/// The entries of the directory `typed` points into whose names start with its last part,
/// sorted, with whether each is a directory; hidden ones only when the part starts with `.`.
pub fn list_candidates(typed: &str) -> Vec<(String, bool)> {
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => (resolve(&typed[..=i]), &typed[i + 1..]),
        None => (PathBuf::from("."), typed),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let wanted =
                name.starts_with(prefix) && (prefix.starts_with('.') || !name.starts_with('.'));
            wanted.then(|| (name, e.path().is_dir()))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
