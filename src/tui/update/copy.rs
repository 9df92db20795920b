//! Copying to the clipboard: the last answer (Ctrl+Y) or a code block (Alt+Y, newest first,
//! each press the one before). The text goes out as an OSC 52 escape (see
//! `terminal::copy_to_clipboard`), which terminals honour over SSH too.

use crate::chat::{split_thinking, Role};
use crate::tui::keymap::CopyWhat;
use crate::tui::msg::Effect;
use crate::tui::state::{EntryBody, State};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// A code block of an answer: its language (if the fence names one) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    pub lang: Option<String>,
    pub code: String,
}

/// The code blocks of a Markdown text, in order.
pub fn code_blocks(markdown: &str) -> Vec<CodeBlock> {
    let mut out = Vec::new();
    let mut current: Option<CodeBlock> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .map(str::to_string)
                        .filter(|l| !l.is_empty()),
                    CodeBlockKind::Indented => None,
                };
                current = Some(CodeBlock {
                    lang,
                    code: String::new(),
                });
            }
            Event::Text(text) => {
                if let Some(block) = &mut current {
                    block.code.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(current.take()),
            _ => {}
        }
    }
    // A block still open (a stopped answer) is still worth copying; an empty one is not.
    out.extend(current);
    out.retain(|b| !b.code.trim().is_empty());
    out
}

/// The answers' text (without thinking), oldest first.
fn answers(state: &State) -> Vec<&str> {
    state
        .conversation
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Message { message, .. } if message.role == Role::Assistant => {
                Some(split_thinking(&message.content).answer)
            }
            _ => None,
        })
        .filter(|text| !text.trim().is_empty())
        .collect()
}

pub(super) fn act(state: &mut State, what: CopyWhat, fx: &mut Vec<Effect>) {
    match what {
        CopyWhat::LastAnswer => match answers(state).last() {
            Some(text) => {
                let text = text.trim().to_string();
                state.status = Some(format!(
                    "Copied the last answer ({} characters) to the clipboard",
                    text.chars().count()
                ));
                fx.push(Effect::Copy(text));
            }
            None => state.status = Some("No answer to copy yet".into()),
        },
        CopyWhat::CodeBlock => {
            let blocks: Vec<CodeBlock> = answers(state).into_iter().flat_map(code_blocks).collect();
            let n = blocks.len();
            if n == 0 {
                state.status = Some("No code block in the answers".into());
                return;
            }
            // Newest first; each press goes one back, wrapping around. New blocks restart.
            let index = match state.code_cursor {
                Some((count, i)) if count == n && i > 0 => i - 1,
                _ => n - 1,
            };
            state.code_cursor = Some((n, index));
            let block = &blocks[index];
            let lines = block.code.lines().count();
            state.status = Some(format!(
                "Copied code block {} of {n} ({}{lines} line{}){}",
                index + 1,
                block
                    .lang
                    .as_deref()
                    .map(|l| format!("{l}, "))
                    .unwrap_or_default(),
                if lines == 1 { "" } else { "s" },
                if n > 1 {
                    " · Alt+Y: the one before"
                } else {
                    ""
                }
            ));
            fx.push(Effect::Copy(block.code.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_indented_and_unclosed_blocks_are_found() {
        let md = "Text\n\n```rust\nfn a() {}\n```\n\n    indented\n\nmore\n\n```py\nprint(1)\n";
        let blocks = code_blocks(md);
        assert_eq!(
            blocks,
            vec![
                CodeBlock {
                    lang: Some("rust".into()),
                    code: "fn a() {}\n".into()
                },
                CodeBlock {
                    lang: None,
                    code: "indented\n".into()
                },
                CodeBlock {
                    lang: Some("py".into()),
                    code: "print(1)\n".into()
                },
            ]
        );
    }
}
