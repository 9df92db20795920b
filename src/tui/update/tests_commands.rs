//! Slash commands as a user types them: each one's effect, that none of them reaches the
//! model, unknown ones kept in the editor with a hint, `//` to send a slash, and Tab's
//! completion of command names.

use super::tree::generated;
use super::Test;
use crate::chat::Role;
use crate::engine::EngineCommand;
use crate::tui::msg::{Effect, SessionEffect};
use crate::tui::state::{ModelEntry, Overlay};
use crossterm::event::{KeyCode, KeyModifiers};

const NONE: KeyModifiers = KeyModifiers::NONE;

impl Test {
    /// Types `text` as the message and presses Enter.
    fn command(&mut self, text: &str) -> Vec<Effect> {
        self.state.input.set_text(text);
        self.key(KeyCode::Enter, NONE)
    }
}

fn status(t: &Test) -> String {
    t.state.status.clone().unwrap_or_default()
}

#[test]
fn help_opens_the_help_screen_and_nothing_goes_to_the_model() {
    let mut t = Test::loaded();
    let fx = t.command("/help");
    assert!(generated(&fx).is_none());
    assert_eq!(t.state.overlay, Overlay::Help);
    assert_eq!(t.state.input.text(), "");
    assert!(!t.state.conversation.has_messages());
}

#[test]
fn an_unknown_command_stays_in_the_editor_with_a_hint() {
    let mut t = Test::loaded();
    let fx = t.command("/hlep me");
    assert!(generated(&fx).is_none());
    assert_eq!(t.state.input.text(), "/hlep me", "kept, to be corrected");
    let said = status(&t);
    assert!(said.contains("Unknown command /hlep"), "{said}");
    assert!(said.contains("did you mean /help?"), "{said}");
    let fx = t.command("/zzzzzz");
    assert!(generated(&fx).is_none());
    assert!(!status(&t).contains("did you mean"), "{}", status(&t));
}

#[test]
fn a_double_slash_or_a_path_goes_to_the_model_as_text() {
    let mut t = Test::loaded();
    t.turn("//help is a command", "yes");
    assert_eq!(t.path()[0], "/help is a command");
    let fx = t.command("/usr/bin/env is where?");
    let sent = generated(&fx).expect("a message, not a command");
    assert_eq!(
        sent.messages().last().map(|m| m.content.as_str()),
        Some("/usr/bin/env is where?")
    );
}

#[test]
fn set_changes_any_sampling_setting_through_the_forms_checks() {
    let mut t = Test::loaded();
    t.command("/set temperature 0.2");
    assert_eq!(t.state.settings.sampling.temperature, 0.2);
    assert!(status(&t).contains("temperature = 0.2"), "{}", status(&t));
    t.command("/set top-p 0.5");
    assert_eq!(t.state.settings.sampling.top_p, 0.5);
    t.command("/set top_k 7");
    assert_eq!(t.state.settings.sampling.top_k, 7);
    t.command("/set max_tokens 99");
    assert_eq!(t.state.settings.max_tokens, 99);

    // Out of range: refused with the range, nothing changed.
    t.command("/set top_p 7");
    assert_eq!(t.state.settings.sampling.top_p, 0.5);
    assert!(status(&t).starts_with("top_p: expected"), "{}", status(&t));
    t.command("/set warmth 3");
    let said = status(&t);
    assert!(said.contains("No setting warmth") && said.contains("temperature"));

    // The next answer is sampled with them.
    let fx = t.command("hi");
    let sent = generated(&fx).expect("a generation");
    assert_eq!(sent.sampling.temperature, 0.2);
    assert_eq!(sent.max_tokens, 99);
}

#[test]
fn system_sets_shows_and_clears_the_system_prompt() {
    let mut t = Test::loaded();
    t.command("/system Answer in French.");
    assert_eq!(t.state.settings.system_prompt, "Answer in French.");
    let fx = t.command("hello");
    let sent = generated(&fx).expect("a generation");
    let first = &sent.messages()[0];
    assert_eq!(
        (first.role, first.content.as_str()),
        (Role::System, "Answer in French.")
    );
    t.command("/system");
    assert!(status(&t).contains("Answer in French."), "{}", status(&t));
    t.command("/system --clear");
    assert_eq!(t.state.settings.system_prompt, "");
}

#[test]
fn save_names_the_conversation_and_saves_it() {
    let mut t = Test::loaded();
    t.command("/save Early");
    assert_eq!(t.state.session.title, "Early");
    assert!(status(&t).contains("saved with the first answer"));
    t.turn("q1", "a1");
    let fx = t.command("/save Trip plans");
    let saved = fx
        .iter()
        .find_map(|e| match e {
            Effect::Session(SessionEffect::Save { session, .. }) => Some(session.clone()),
            _ => None,
        })
        .expect("saved now");
    assert_eq!(saved.title, "Trip plans");
    assert_eq!(t.state.input.text(), "");
}

#[test]
fn fork_goes_on_in_a_new_conversation_with_the_whole_path() {
    let mut t = Test::three_turns();
    let original = t.state.session.id.clone();
    t.command("/fork");
    assert_ne!(t.state.session.id, original);
    assert_eq!(t.path(), ["q1", "a1", "q2", "a2", "q3", "a3"]);
    let mut empty = Test::loaded();
    empty.command("/fork");
    assert_eq!(status(&empty), "Nothing to fork yet");
}

#[test]
fn clear_starts_a_new_conversation_and_export_writes_this_one() {
    let mut t = Test::three_turns();
    let fx = t.command("/export");
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::Session(SessionEffect::Export { .. }))));
    t.command("/clear");
    assert!(!t.state.conversation.has_messages());
    assert!(t.state.session.id.is_none());
}

#[test]
fn model_loads_by_exact_name_or_a_part_that_names_one() {
    let mut t = Test::loaded();
    t.state.picker.entries = ["qwen3-0.6b", "qwen3-4b", "gemma-3-1b"]
        .iter()
        .map(|name| ModelEntry::from_path(format!("/models/{name}.gguf").into()))
        .collect();
    // The scan is over: a name matching nothing is not still to come.
    t.state.picker.scanning = false;
    let loads = |fx: &[Effect]| -> Vec<String> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Send(EngineCommand::Load(l)) => Some(l.model_path.display().to_string()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        loads(&t.command("/model gemma")),
        ["/models/gemma-3-1b.gguf"]
    );
    t.state.model.loading = None;
    assert!(loads(&t.command("/model qwen3")).is_empty());
    assert!(status(&t).contains("matches"), "{}", status(&t));
    assert_eq!(
        loads(&t.command("/model QWEN3-4B")),
        ["/models/qwen3-4b.gguf"]
    );
    t.state.model.loading = None;
    assert!(loads(&t.command("/model llama")).is_empty());
    assert!(
        status(&t).contains("No model named llama"),
        "{}",
        status(&t)
    );
    t.command("/model");
    assert_eq!(t.state.overlay, Overlay::Picker);
}

#[test]
fn file_puts_the_mention_in_the_editor_and_reads_the_file() {
    let mut t = Test::loaded();
    let fx = t.command("/file notes/a b.txt");
    assert_eq!(t.state.input.text(), "@\"notes/a b.txt\" ");
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::ReadFile(p) if p == "notes/a b.txt")));
    assert!(generated(&fx).is_none());
}

#[test]
fn tab_completes_a_command_name_or_lists_the_ones_it_could_be() {
    let mut t = Test::loaded();
    t.state.input.set_text("/he");
    t.key(KeyCode::Tab, NONE);
    assert_eq!(t.state.input.text(), "/help");
    t.state.input.set_text("/sy");
    t.key(KeyCode::Tab, NONE);
    assert_eq!(t.state.input.text(), "/system ", "a command with arguments");
    t.state.input.set_text("/s");
    t.key(KeyCode::Tab, NONE);
    assert_eq!(t.state.input.text(), "/s");
    let said = status(&t);
    for name in ["/system", "/set", "/save"] {
        assert!(said.contains(name), "{said}");
    }
}
