//! Whole-screen snapshots of the TUI, drawn by `ui::render` on ratatui's TestBackend.
//! The snapshots live in tests/tui/snapshots (named `tui__snapshots__NAME.snap` after this
//! module's path); with CI=true insta fails on any difference and writes nothing. After an
//! intended change: `INSTA_UPDATE=always cargo test --test tui snapshots::`, then review the
//! diff of tests/tui/snapshots.

use crate::tui_support::*;
use crossterm::event::KeyCode;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use taper::protocol::EngineEvent;
use taper::protocol::StopReason;
use taper::tui::state::Overlay;
use taper::tui::ui::{render, ChatCache};
use taper::tui::Msg;

fn draw(h: &mut Harness, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut cache = ChatCache::default();
    terminal
        .draw(|f| {
            h.state.viewport = render(f, &h.state, &mut cache);
        })
        .unwrap();
    terminal
}

/// Fixed memory figures, so the snapshots do not depend on the test process.
fn memory(h: &mut Harness) {
    h.send(Msg::Memory {
        rss: Some(151_200_000),
        peak: Some(241_000_000),
    });
}

const ANSWER: &str = "## Ownership in Rust

Every value has **one owner**; when the owner goes out of scope, the value is *dropped*.

- Moving a value transfers ownership
- Borrowing with `&` lends it without a move

```rust
let s = String::from(\"hi\");
let t = s; // s is moved
```

That is why `s` cannot be used after the move.";

#[test]
fn main_screen_mid_answer() {
    let mut h = Harness::with_model();
    let turn = h.ask("Explain ownership in Rust, briefly.").turn_id;
    h.engine(EngineEvent::PromptProgress {
        turn_id: turn,
        done: 41,
        total: 41,
        cached: 0,
    });
    h.tokens(turn, &[ANSWER]);
    h.finish(turn, usage(41, 0, 96, StopReason::EndOfTurn));
    let turn = h.ask("And borrowing?").turn_id;
    h.engine(EngineEvent::PromptProgress {
        turn_id: turn,
        done: 14,
        total: 14,
        cached: 137,
    });
    for piece in [
        "A ",
        "borrow ",
        "is ",
        "a ",
        "reference ",
        "that ",
        "does ",
        "not ",
    ] {
        h.tokens(turn, &[piece]);
    }
    memory(&mut h);
    let terminal = draw(&mut h, 110, 36);
    insta::assert_snapshot!("main_mid_answer", terminal.backend());
}

#[test]
fn model_picker() {
    let mut h = Harness::with_model();
    h.send(Msg::Models(vec![
        entry(SMOL, "llama", "Q4_1", 98_362_432),
        entry(GEMMA, "gemma3", "Q4_K", 253_115_232),
        entry("qwen3-0.6b-q8_0", "qwen3", "Q8_0", 639_447_744),
    ]));
    h.send(ctrl('p'));
    h.send(Msg::Models(vec![
        entry(SMOL, "llama", "Q4_1", 98_362_432),
        entry(GEMMA, "gemma3", "Q4_K", 253_115_232),
        entry("qwen3-0.6b-q8_0", "qwen3", "Q8_0", 639_447_744),
    ]));
    h.type_text("qwen");
    memory(&mut h);
    let terminal = draw(&mut h, 110, 30);
    insta::assert_snapshot!("picker", terminal.backend());
}

#[test]
fn picker_at_start_without_models() {
    let mut h = Harness::empty();
    h.state.overlay = Overlay::Picker;
    h.send(Msg::Models(vec![]));
    let terminal = draw(&mut h, 100, 24);
    insta::assert_snapshot!("picker_empty", terminal.backend());
}

#[test]
fn help_overlay() {
    let mut h = Harness::with_model();
    h.send(key(KeyCode::Char('?')));
    memory(&mut h);
    let terminal = draw(&mut h, 110, 36);
    insta::assert_snapshot!("help", terminal.backend());
}

#[test]
fn errors_are_shown_in_the_chat() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.tokens(turn, &["Hel"]);
    h.engine(EngineEvent::Failed {
        turn_id: Some(turn),
        message: "internal error: index out of bounds".into(),
    });
    h.send(Msg::Load(entry("broken", "llama", "Q4_0", 1_000)));
    h.engine(EngineEvent::Failed {
        turn_id: None,
        message: "/models/broken.gguf: not a GGUF file (bad magic)".into(),
    });
    memory(&mut h);
    let terminal = draw(&mut h, 100, 24);
    insta::assert_snapshot!("error", terminal.backend());
}

#[test]
fn a_terminal_too_small_gets_a_clear_message() {
    let mut h = Harness::with_model();
    let terminal = draw(&mut h, 40, 10);
    insta::assert_snapshot!("too_small", terminal.backend());
}

#[test]
fn thinking_is_folded_then_shown_dimmed() {
    let mut h = Harness::with_model();
    let turn = h.ask("What is 2+2?").turn_id;
    h.tokens(
        turn,
        &[
            "<think>\nThe user asks for 2+2. That is 4.\n</think>\n\n",
            "**4**.",
        ],
    );
    h.finish(turn, usage(12, 0, 20, StopReason::EndOfTurn));
    memory(&mut h);
    let folded = draw(&mut h, 100, 20);
    insta::assert_snapshot!("thinking_folded", folded.backend());
    h.send(ctrl('t'));
    let shown = draw(&mut h, 100, 20);
    insta::assert_snapshot!("thinking_shown", shown.backend());
}

#[test]
fn settings_overlay() {
    let mut h = Harness::with_model();
    h.send(ctrl('s'));
    h.send(key(KeyCode::Down));
    h.send(key(KeyCode::Enter));
    memory(&mut h);
    let terminal = draw(&mut h, 100, 30);
    insta::assert_snapshot!("settings", terminal.backend());
}

#[test]
fn loading_shows_progress_and_the_input_stays_editable() {
    let mut h = Harness::empty();
    h.send(Msg::Load(entry(GEMMA, "gemma3", "Q4_K", 253_115_232)));
    h.type_text("typed while loading");
    memory(&mut h);
    let terminal = draw(&mut h, 100, 24);
    insta::assert_snapshot!("loading", terminal.backend());
}

/// The sessions list with fixed entries: the open conversation (●), another, and a file
/// written by a newer taper; then the question before a delete; then the list filtered.
#[test]
fn sessions_list() {
    use std::path::PathBuf;
    use taper::sessions::{Listed, Summary};
    let mut h = Harness::with_model();
    h.state.session.dir = PathBuf::from("/data/sessions");
    h.state.session.id = Some("20261130-101500-c0de".into());
    h.send(ctrl('o'));
    let listed = |id: &str, title: &str, messages, models: &[&str], at| Listed {
        path: PathBuf::from(format!("/data/sessions/{id}.json")),
        id: id.to_string(),
        summary: Ok(Summary {
            title: title.to_string(),
            created_at: at,
            updated_at: at,
            messages,
            models: models.iter().map(|m| m.to_string()).collect(),
            text: title.to_lowercase(),
        }),
        sort_time: at,
    };
    let entries = vec![
        listed(
            "20261130-101500-c0de",
            "How do I print in Rust?",
            4,
            &[SMOL, GEMMA],
            1_796_033_760,
        ),
        listed(
            "20261129-180000-beef",
            "Plan a three-day trip to Lisbon with a budget",
            12,
            &[GEMMA],
            1_795_975_200,
        ),
        Listed {
            path: PathBuf::from("/data/sessions/20261128-090000-f00d.json"),
            id: "20261128-090000-f00d".into(),
            summary: Err(
                "written by a newer taper (format version 2; this one reads up to 1)".into(),
            ),
            sort_time: 1_795_870_800,
        },
    ];
    h.send(Msg::Session(taper::tui::SessionMsg::Listed(entries)));
    h.send(key(KeyCode::Down));
    memory(&mut h);
    let terminal = draw(&mut h, 120, 30);
    insta::assert_snapshot!("sessions_list", terminal.backend());
    h.send(key(KeyCode::Delete));
    let terminal = draw(&mut h, 120, 30);
    insta::assert_snapshot!("sessions_confirm_delete", terminal.backend());
    h.send(key(KeyCode::Esc));
    h.type_text("lisbon");
    let terminal = draw(&mut h, 120, 30);
    insta::assert_snapshot!("sessions_filtered", terminal.backend());
}

#[test]
fn an_answer_cut_at_the_token_limit_is_marked_with_how_to_go_on_or_raise_it() {
    let mut h = Harness::with_model();
    let turn = h.ask("Tell me a story").turn_id;
    h.tokens(turn, &["Once upon"]);
    h.finish(turn, usage(10, 0, 2, StopReason::MaxTokens));
    let terminal = draw(&mut h, 120, 30);
    let buffer = terminal.backend().buffer();
    let screen: String = buffer.content().iter().map(|c| c.symbol()).collect();
    assert!(
        screen.contains("✂ cut at the limit of 2 tokens")
            && screen.contains("Ctrl+G continues")
            && screen.contains("Ctrl+S raises"),
        "{screen}"
    );
}

/// Two answers to one question (Ctrl+R kept the first), the second selected with Alt+↑: its
/// header marked, `‹ 2/2 ›`, the selection's keys in the footer.
#[test]
fn a_selected_answer_with_a_sibling() {
    let mut h = Harness::with_model();
    memory(&mut h);
    let turn = h.ask("Name a fruit.").turn_id;
    h.tokens(turn, &["An apple."]);
    h.finish(turn, usage(20, 0, 4, StopReason::EndOfTurn));
    h.send(ctrl('r'));
    let again = h.state.phase.turn_id().expect("answering again");
    h.tokens(again, &["A pear."]);
    h.finish(again, usage(20, 20, 3, StopReason::EndOfTurn));
    h.send(alt(KeyCode::Up));
    let terminal = draw(&mut h, 100, 24);
    insta::assert_snapshot!("selected_sibling", terminal.backend());
}

/// An earlier question being edited: marked in the chat, the editor's title says what Enter
/// and Esc do.
#[test]
fn an_earlier_message_being_edited() {
    let mut h = Harness::with_model();
    memory(&mut h);
    for (q, a) in [("Name a fruit.", "An apple."), ("Name a colour.", "Blue.")] {
        let turn = h.ask(q).turn_id;
        h.tokens(turn, &[a]);
        h.finish(turn, usage(20, 0, 4, StopReason::EndOfTurn));
    }
    h.send(alt(KeyCode::Up));
    h.send(key(KeyCode::Up));
    h.send(key(KeyCode::Char('e')));
    h.state.status = None;
    let terminal = draw(&mut h, 100, 24);
    insta::assert_snapshot!("editing_earlier", terminal.backend());
}

/// A long message soft-wrapped in the editor, which grows to hold it, with three files: one
/// ready (its tokens estimated, no tokenizer at hand), one larger than the context, one binary.
#[test]
fn a_wrapped_message_with_files_attached() {
    let mut h = Harness::with_model();
    memory(&mut h);
    h.type_text(
        "Compare the two reports below and tell me, in a short list, which figures changed \
         between them and by how much; @q1.md and @q2.csv and @logo.png are attached ",
    );
    for (path, result) in [
        ("q1.md", Ok("# Q1\nRevenue 10\n".to_string())),
        ("q2.csv", Ok("quarter,revenue\n".repeat(1200))),
        (
            "logo.png",
            Err(taper::tui::files::NotText::Refused(
                "is a binary file, not text".into(),
            )),
        ),
    ] {
        h.send(Msg::FileRead {
            path: path.into(),
            result,
        });
    }
    let terminal = draw(&mut h, 100, 24);
    insta::assert_snapshot!("files_attached", terminal.backend());
}
