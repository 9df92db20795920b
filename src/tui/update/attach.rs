//! Files in the message: keeping the attachments in step with the `@path`s the editor holds
//! (the app reads each new one), counting their tokens, refusing what cannot go, and Tab's
//! completion of commands and paths.

use super::turn;
use crate::tui::commands;
use crate::tui::files::{self, NotText};
use crate::tui::msg::Effect;
use crate::tui::state::attachments::{token_label, Attachment, FileState};
use crate::tui::state::State;

/// After the editor changed: files newly mentioned are read (with `all`, also one the text
/// ends in, which may still be being typed), and those no longer mentioned are dropped.
pub(super) fn sync(state: &mut State, all: bool, fx: &mut Vec<Effect>) {
    let text = state.input.text();
    let mentioned = files::mentions(&text, false);
    state
        .attachments
        .files
        .retain(|a| mentioned.iter().any(|m| m.path == a.path));
    let wanted = if all {
        mentioned
    } else {
        files::mentions(&text, true)
    };
    for mention in wanted {
        if state.attachments.get(&mention.path).is_none() {
            state.attachments.files.push(Attachment {
                path: mention.path.clone(),
                file: FileState::Reading,
            });
            fx.push(Effect::ReadFile(mention.path));
        }
    }
}

/// The app read a mentioned file.
pub(super) fn file_read(
    state: &mut State,
    path: String,
    result: Result<String, NotText>,
    fx: &mut Vec<Effect>,
) {
    let file = match result {
        Ok(text) => {
            let block = files::fenced(&path, &text);
            let (tokens, exact) = count(state, &block);
            FileState::Text {
                block,
                tokens,
                exact,
            }
        }
        Err(NotText::Missing) => FileState::Missing,
        Err(NotText::Refused(why)) => FileState::Refused(why),
    };
    // A file no longer mentioned is not wanted any more.
    let Some(attachment) = state.attachments.get_mut(&path) else {
        return;
    };
    attachment.file = file;
    if state.attachments.send_when_read && !state.attachments.reading() {
        state.attachments.send_when_read = false;
        turn::submit(state, fx);
    }
}

/// Tokens in `text` by the loaded model's tokenizer, or an estimate (four bytes a token)
/// for a remote model or none.
fn count(state: &State, text: &str) -> (usize, bool) {
    let exact = state
        .model
        .loaded
        .as_ref()
        .and_then(|i| i.tokens.count(text));
    match exact {
        Some(n) => (n, true),
        None => (text.len().div_ceil(4), false),
    }
}

/// Another model is loaded: its tokenizer counts the files afresh.
pub(super) fn recount(state: &mut State) {
    let counts: Vec<Option<(usize, bool)>> = (state.attachments.files.iter())
        .map(|a| match &a.file {
            FileState::Text { block, .. } => Some(count(state, block)),
            _ => None,
        })
        .collect();
    for (a, counted) in state.attachments.files.iter_mut().zip(counts) {
        if let (FileState::Text { tokens, exact, .. }, Some((n, is_exact))) = (&mut a.file, counted)
        {
            (*tokens, *exact) = (n, is_exact);
        }
    }
}

/// Files that would not fit in what is left of the context, with the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    pub tokens: usize,
    /// Counted by the model's tokenizer rather than estimated.
    pub exact: bool,
    pub context: usize,
    pub used: usize,
}

impl TooLong {
    /// For the status line when Enter is refused.
    pub fn sentence(&self) -> String {
        format!(
            "{} do not fit: the context holds {} tokens and the conversation uses {}",
            token_label(self.tokens, self.exact),
            self.context,
            self.used
        )
    }

    /// For the editor's border, where room is short.
    pub fn short(&self) -> String {
        format!(
            "{}, {} left: too long",
            token_label(self.tokens, self.exact),
            self.context.saturating_sub(self.used)
        )
    }
}

/// Whether files of `tokens` fit with the conversation as it stands.
pub fn too_long(state: &State, tokens: usize, exact: bool) -> Option<TooLong> {
    let context = state.model.loaded.as_ref()?.context_size;
    // A remote that does not say its context has a size of 0: the server will judge.
    if context == 0 {
        return None;
    }
    let used = state.stats.context_used();
    (used + tokens >= context).then_some(TooLong {
        tokens,
        exact,
        context,
        used,
    })
}

/// The message as the model reads it: the text, then each attached file as a fenced block;
/// or, when a file cannot go, the sentence that says why (nothing is sent then).
pub(super) fn expand(state: &State, text: &str) -> Result<String, String> {
    if let Some((path, why)) = state.attachments.refused() {
        return Err(format!("@{path} {why}: remove it from the message to send"));
    }
    let total: usize = state.attachments.ready().map(|(_, _, t)| t).sum();
    let exact = state.attachments.files.iter().all(|a| match a.file {
        FileState::Text { exact, .. } => exact,
        _ => true,
    });
    if let Some(why) = too_long(state, total, exact) {
        return Err(format!("The files' {}", why.sentence()));
    }
    if state.attachments.ready().next().is_none() {
        return Ok(text.to_string());
    }
    let mut message = text.trim_end().to_string();
    for (_, block, _) in state.attachments.ready() {
        message.push_str("\n\n");
        message.push_str(block);
    }
    Ok(message)
}

/// Tab: completes a command name at the start of the message, or the `@path` at the cursor
/// (the app lists the directory); anywhere else it is a key for the editor.
pub(super) fn complete(state: &mut State, key: crossterm::event::KeyEvent, fx: &mut Vec<Effect>) {
    let before = state.input.before_cursor();
    if let Some(typed) = before.strip_prefix('/') {
        if state.input.line_count() == 1 && !typed.contains(char::is_whitespace) {
            return complete_command(state, typed);
        }
    }
    match files::mention_at(&before, before.len()) {
        Some((_, typed)) => fx.push(Effect::ListPaths(typed.to_string())),
        None => state.input.key(key),
    }
}

fn complete_command(state: &mut State, typed: &str) {
    let found = commands::starting_with(typed);
    match found.as_slice() {
        [] => {
            state.status = Some(format!("No command starts with /{typed}: /help lists them"));
        }
        [one] => {
            let space = if one.args.is_empty() { "" } else { " " };
            state
                .input
                .replace_before_cursor(typed.chars().count(), &format!("{}{space}", one.name));
        }
        many => {
            let names: Vec<String> = many.iter().map(|c| format!("/{}", c.name)).collect();
            let shared = files::complete_path(
                typed,
                &many
                    .iter()
                    .map(|c| (c.name.to_string(), false))
                    .collect::<Vec<_>>(),
            )
            .unwrap_or_else(|| typed.to_string());
            state
                .input
                .replace_before_cursor(typed.chars().count(), &shared);
            state.status = Some(names.join("  "));
        }
    }
}

/// The app listed the directory for the path `typed` at the cursor.
pub(super) fn paths_listed(
    state: &mut State,
    typed: String,
    candidates: Vec<(String, bool)>,
    fx: &mut Vec<Effect>,
) {
    let before = state.input.before_cursor();
    // The user went on typing: this listing is for a path no longer there.
    if files::mention_at(&before, before.len()).map(|(_, t)| t) != Some(typed.as_str()) {
        return;
    }
    match files::complete_path(&typed, &candidates) {
        None => state.status = Some(format!("No file starts with {typed}")),
        Some(completed) => {
            state
                .input
                .replace_before_cursor(typed.chars().count(), &completed);
            if candidates.len() > 1 {
                let names: Vec<&str> = candidates
                    .iter()
                    .take(12)
                    .map(|(n, _)| n.as_str())
                    .collect();
                let more = candidates.len().saturating_sub(names.len());
                let tail = if more > 0 {
                    format!("  (+{more})")
                } else {
                    String::new()
                };
                state.status = Some(format!("{}{tail}", names.join("  ")));
            }
            sync(state, false, fx);
        }
    }
}
