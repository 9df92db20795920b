//! Files in the message as the editor and the app trade them: a mention typed is read, the
//! file goes to the model as a fenced block after the text, its tokens are counted by the
//! model's tokenizer, and what cannot go (binary, missing, too long) is said and kept back.

use super::tree::generated;
use super::Test;
use crate::protocol::{EngineEvent, TokenCounter};
use crate::tui::files::NotText;
use crate::tui::msg::{Effect, Msg};
use crate::tui::state::attachments::FileState;
use crossterm::event::{KeyCode, KeyModifiers};

const NONE: KeyModifiers = KeyModifiers::NONE;

fn reads(fx: &[Effect]) -> Vec<&str> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::ReadFile(path) => Some(path.as_str()),
            _ => None,
        })
        .collect()
}

impl Test {
    /// Types `text` key by key, as a person would; every effect on the way.
    fn type_text(&mut self, text: &str) -> Vec<Effect> {
        text.chars()
            .flat_map(|c| self.key(KeyCode::Char(c), NONE))
            .collect()
    }

    fn file_read(&mut self, path: &str, result: Result<&str, NotText>) -> Vec<Effect> {
        self.send(Msg::FileRead {
            path: path.into(),
            result: result.map(str::to_string),
        })
    }

    /// With a model whose tokenizer counts words.
    fn loaded_counting_words() -> Self {
        let mut t = Test::loaded();
        let mut info = t.state.model.loaded.clone().expect("loaded");
        info.tokens = TokenCounter::new(|text| text.split_whitespace().count());
        t.send(Msg::Engine(EngineEvent::Loaded {
            info,
            notices: vec![],
        }));
        t
    }
}

#[test]
fn a_typed_mention_is_read_counted_and_sent_as_a_fenced_block_after_the_text() {
    let mut t = Test::loaded_counting_words();
    let fx = t.type_text("summarize @notes.md");
    assert!(
        reads(&fx).is_empty(),
        "not read while the name is being typed"
    );
    let fx = t.type_text(" please");
    assert_eq!(reads(&fx), ["notes.md"]);
    t.file_read("notes.md", Ok("one two three\n"));
    match &t.state.attachments.files[0].file {
        FileState::Text { tokens, exact, .. } => {
            // The name line and the fences count too: "notes.md", "```md", "```".
            assert_eq!((*tokens, *exact), (6, true));
        }
        other => panic!("{other:?}"),
    }
    let fx = t.key(KeyCode::Enter, NONE);
    let sent = generated(&fx).expect("sent");
    let message = &sent.messages().last().expect("the question").content;
    assert!(
        message.starts_with("summarize @notes.md please\n\nnotes.md\n```md\none two three\n```"),
        "{message}"
    );
    assert_eq!(t.state.input.text(), "");
    assert!(t.state.attachments.files.is_empty());
}

#[test]
fn a_file_no_longer_mentioned_is_dropped() {
    let mut t = Test::loaded();
    t.type_text("@a.txt ");
    t.file_read("a.txt", Ok("alpha"));
    assert_eq!(t.state.attachments.files.len(), 1);
    t.state.input.set_text("");
    t.type_text("just text");
    assert!(t.state.attachments.files.is_empty());
    let fx = t.key(KeyCode::Enter, NONE);
    let sent = generated(&fx).expect("sent");
    assert_eq!(sent.messages().last().unwrap().content, "just text");
}

#[test]
fn enter_while_a_file_is_read_sends_once_it_is_in() {
    let mut t = Test::loaded();
    t.state.input.set_text("what is in @b.rs");
    let fx = t.key(KeyCode::Enter, NONE);
    assert_eq!(
        reads(&fx),
        ["b.rs"],
        "the mention the text ends in is read too"
    );
    assert!(generated(&fx).is_none());
    let fx = t.file_read("b.rs", Ok("fn main() {}"));
    let sent = generated(&fx).expect("sent when read");
    let message = &sent.messages().last().unwrap().content;
    assert!(
        message.ends_with("b.rs\n```rs\nfn main() {}\n```"),
        "{message}"
    );
}

#[test]
fn a_binary_or_unreadable_file_is_said_in_one_line_and_nothing_is_sent() {
    let mut t = Test::loaded();
    t.type_text("look at @logo.png ");
    t.file_read(
        "logo.png",
        Err(NotText::Refused("is binary, not text".into())),
    );
    let fx = t.key(KeyCode::Enter, NONE);
    assert!(generated(&fx).is_none());
    let said = t.state.status.clone().unwrap_or_default();
    assert_eq!(
        said,
        "@logo.png is binary, not text: remove it from the message to send"
    );
    assert_eq!(t.state.input.text(), "look at @logo.png ", "nothing lost");
}

#[test]
fn a_name_that_is_no_file_goes_as_the_text_it_is() {
    let mut t = Test::loaded();
    t.type_text("ask @bob about it");
    t.file_read("bob", Err(NotText::Missing));
    let fx = t.key(KeyCode::Enter, NONE);
    let sent = generated(&fx).expect("sent");
    assert_eq!(sent.messages().last().unwrap().content, "ask @bob about it");
}

#[test]
fn a_file_that_does_not_fit_the_context_is_refused_with_the_numbers() {
    let mut t = Test::loaded_counting_words();
    t.turn("q1", "a1");
    t.type_text("read @big.txt ");
    let words = vec!["word"; 600].join(" ");
    t.file_read("big.txt", Ok(&words));
    let fx = t.key(KeyCode::Enter, NONE);
    assert!(generated(&fx).is_none());
    let said = t.state.status.clone().unwrap_or_default();
    assert!(
        said.contains("603 tokens do not fit: the context holds 512 tokens"),
        "{said}"
    );
    assert!(said.contains("the conversation uses"), "{said}");
    assert_eq!(t.state.input.text(), "read @big.txt ");
}
