//! The effects and messages of a pure `update`: header reads, session id tags, the start,
//! clipboard failures and the turn's phase, each checked without a terminal or a file.

use super::update;
use crate::engine::EngineCommand;
use crate::hub::HubFile;
use crate::protocol::{EngineEvent, ModelInfo};
use crate::protocol::{StopReason, Usage};
use crate::tui::msg::{Effect, Msg, SessionEffect, SessionMsg};
use crate::tui::state::{ModelEntry, Overlay, Phase, Settings, State};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Test {
    state: State,
    now: Instant,
}

impl Test {
    fn new() -> Self {
        let now = Instant::now();
        let settings = Settings {
            system_prompt: String::new(),
            sampling: Default::default(),
            max_tokens: 16,
            tool_choice: Default::default(),
            speculation: Default::default(),
        };
        let mut state = State::new(settings, 512, PathBuf::from("/models"), now);
        state.session.dir = PathBuf::from("/sessions");
        Self { state, now }
    }

    /// With a model loaded.
    fn loaded() -> Self {
        let mut t = Self::new();
        t.send(Msg::Load(ModelEntry::from_path("/models/m.gguf".into())));
        t.send(Msg::Engine(EngineEvent::Loaded {
            info: ModelInfo {
                path: "/models/m.gguf".into(),
                name: "m".into(),
                architecture: "llama".into(),
                quantization: "Q4_0".into(),
                file_size: 1,
                parameters: 1,
                context_size: 512,
                cache_type: crate::protocol::CacheType::F16,
                cache_bytes: 1 << 20,
                context_length: 512,
                load_s: 0.1,
                threads: 1,
                kernels: "avx2",
                remote: None,
                tokens: Default::default(),
                kept_loaded: false,
                resident: vec![],
                draft_model: None,
            },
            notices: vec![],
        }));
        t
    }

    fn send(&mut self, msg: Msg) -> Vec<Effect> {
        self.now += Duration::from_millis(100);
        update(&mut self.state, msg, self.now)
    }

    fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) -> Vec<Effect> {
        self.send(Msg::Key(KeyEvent::new(code, modifiers)))
    }

    /// Asks `text`; the turn id.
    fn ask(&mut self, text: &str) -> u64 {
        self.state.input.set_text(text);
        let fx = self.key(KeyCode::Enter, KeyModifiers::NONE);
        fx.iter()
            .find_map(|e| match e {
                Effect::Send(EngineCommand::Generate(g)) => Some(g.turn_id),
                _ => None,
            })
            .expect("a generate request")
    }

    fn finish(&mut self, turn_id: u64) -> Vec<Effect> {
        let usage = Usage {
            generated_tokens: 1,
            stop: Some(StopReason::EndOfTurn),
            ..Default::default()
        };
        self.send(Msg::Engine(EngineEvent::Finished {
            turn_id,
            usage,
            tool_calls: Vec::new(),
        }))
    }
}

fn saved_ids(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Session(SessionEffect::Save { session, .. }) => Some(session.id.clone()),
            _ => None,
        })
        .collect()
}

fn asks_for_a_tag(fx: &[Effect]) -> bool {
    fx.iter()
        .any(|e| matches!(e, Effect::Session(SessionEffect::DrawTag)))
}

#[test]
fn choosing_a_downloaded_model_asks_for_its_header_and_loads_when_it_comes_back() {
    let mut t = Test::loaded();
    let mut entry = ModelEntry::from_path("qwen3.gguf".into());
    entry.name = "qwen3-0.6b".into();
    entry.download = Some(HubFile::new(
        "unsloth/Qwen3-0.6B-GGUF",
        "Qwen3-0.6B-Q4_K_M.gguf",
    ));
    t.send(Msg::Models(vec![entry]));
    t.key(KeyCode::Char('p'), KeyModifiers::CONTROL);
    let fx = t.key(KeyCode::Enter, KeyModifiers::NONE);
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Download(_))),
        "{fx:?}"
    );

    let path = PathBuf::from("/cache/Qwen3-0.6B-Q4_K_M.gguf");
    let fx = t.send(Msg::Downloaded(path.clone()));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::ReadHeader(p) if *p == path)),
        "{fx:?}"
    );
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Send(_))),
        "no load before the header"
    );

    let mut read = ModelEntry::from_path(path.clone());
    read.architecture = "qwen3".into();
    let fx = t.send(Msg::HeaderRead(read));
    let load = fx.iter().find_map(|e| match e {
        Effect::Send(EngineCommand::Load(l)) => Some(l.model_path.clone()),
        _ => None,
    });
    assert_eq!(load, Some(path));
    assert!(t.state.model.download.is_none());
    let loading = t.state.model.loading.as_ref().expect("loading");
    assert_eq!(
        (
            loading.entry.name.as_str(),
            loading.entry.architecture.as_str()
        ),
        ("qwen3-0.6b", "qwen3"),
        "the catalogue name, the header's facts"
    );
}

#[test]
fn a_new_conversations_id_comes_from_the_tag_the_app_drew() {
    let mut t = Test::loaded();
    t.send(Msg::Session(SessionMsg::Tag(0xbeef)));
    let turn = t.ask("Hi");
    let fx = t.finish(turn);
    let ids = saved_ids(&fx);
    assert_eq!(ids.len(), 1);
    assert!(ids[0].ends_with("-beef"), "{}", ids[0]);
    assert!(asks_for_a_tag(&fx), "the used tag is replaced at once");
    assert_eq!(t.state.session.next_tag, None);

    // The next conversation takes the next tag; the first keeps its id.
    t.send(Msg::Session(SessionMsg::Tag(0x1234)));
    t.key(KeyCode::Char('n'), KeyModifiers::CONTROL);
    let turn = t.ask("Again");
    let ids = saved_ids(&t.finish(turn));
    assert!(ids[0].ends_with("-1234"), "{}", ids[0]);
}

#[test]
fn a_saved_conversation_asks_for_no_new_tag() {
    let mut t = Test::loaded();
    t.send(Msg::Session(SessionMsg::Tag(7)));
    let turn = t.ask("Hi");
    t.finish(turn);
    t.send(Msg::Session(SessionMsg::Tag(8)));
    let turn = t.ask("More");
    let fx = t.finish(turn);
    assert_eq!(saved_ids(&fx).len(), 1);
    assert!(!asks_for_a_tag(&fx), "{fx:?}");
    assert_eq!(t.state.session.next_tag, Some(8));
}

#[test]
fn start_scans_draws_a_tag_and_loads_the_model_or_opens_the_picker() {
    let mut t = Test::new();
    let fx = t.send(Msg::Start(Some(ModelEntry::from_path("/m.gguf".into()))));
    assert!(matches!(
        fx.as_slice(),
        [
            Effect::ScanModels,
            Effect::Session(SessionEffect::DrawTag),
            Effect::Send(EngineCommand::Load(_))
        ]
    ));
    assert_eq!(t.state.overlay, Overlay::None);
    let mut t = Test::new();
    t.send(Msg::Start(None));
    assert_eq!(t.state.overlay, Overlay::Picker);
}

#[test]
fn a_failed_copy_is_said_in_the_status() {
    let mut t = Test::loaded();
    let fx = t.send(Msg::CopyFailed("no terminal".into()));
    assert!(fx.is_empty());
    assert_eq!(
        t.state.status.as_deref(),
        Some("Could not copy: no terminal")
    );
}

#[test]
fn the_phase_is_answering_from_the_question_to_the_end_of_the_turn() {
    let mut t = Test::loaded();
    assert_eq!(t.state.phase, Phase::Idle);
    let turn = t.ask("Hi");
    assert_eq!(t.state.phase, Phase::Answering { turn_id: turn });
    t.finish(turn);
    assert_eq!(t.state.phase, Phase::Idle);

    // Stopped: idle at once; the stopped turn's late figures do not end the next one.
    let first = t.ask("Story");
    t.key(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(t.state.phase, Phase::Idle);
    let second = t.ask("Other");
    t.finish(first);
    assert_eq!(t.state.phase, Phase::Answering { turn_id: second });

    // Failed, or the engine gone: idle.
    t.send(Msg::Engine(EngineEvent::Failed {
        turn_id: Some(second),
        message: "broken".into(),
    }));
    assert_eq!(t.state.phase, Phase::Idle);
    t.ask("Last");
    t.send(Msg::EngineStopped);
    assert_eq!(t.state.phase, Phase::Idle);
}

#[test]
fn help_scrolls_within_its_lines() {
    let mut t = Test::loaded();
    t.key(KeyCode::F(1), KeyModifiers::NONE);
    assert_eq!(t.state.overlay, Overlay::Help);
    t.key(KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(t.state.help_top, 0);
    t.key(KeyCode::PageDown, KeyModifiers::NONE);
    t.key(KeyCode::Down, KeyModifiers::NONE);
    assert_eq!(t.state.help_top, 11);
    for _ in 0..100 {
        t.key(KeyCode::PageDown, KeyModifiers::NONE);
    }
    let lines = crate::tui::keys::help_lines().len();
    assert_eq!(t.state.help_top, lines - 1);
    t.key(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(t.state.overlay, Overlay::None);
}

#[path = "tests_tools.rs"]
mod tools;

#[path = "tests_tree.rs"]
mod tree;

#[path = "tests_commands.rs"]
mod commands;

#[path = "tests_attach.rs"]
mod attach;

#[path = "tests_continue.rs"]
mod continue_answer;

#[path = "tests_fields.rs"]
mod fields;

#[test]
fn a_remote_listing_that_arrives_first_does_not_keep_the_picker_on_the_remote() {
    let mut t = Test::new();
    t.send(Msg::Start(None));
    assert_eq!(t.state.overlay, Overlay::Picker);
    let mut remote = ModelEntry::from_path("box/big".into());
    remote.architecture = crate::tui::state::picker::REMOTE.into();
    t.send(Msg::RemoteModels(vec![remote.clone()]));
    t.send(Msg::Models(vec![
        ModelEntry::from_path("/models/a.gguf".into()),
        ModelEntry::from_path("/models/b.gguf".into()),
    ]));
    let chosen = t.state.picker.selected_entry().map(|e| e.path.clone());
    assert_eq!(chosen, Some(PathBuf::from("/models/a.gguf")));
    // A selection the user made stays where it is when a listing comes in.
    t.key(KeyCode::Down, KeyModifiers::NONE);
    t.key(KeyCode::Down, KeyModifiers::NONE);
    t.send(Msg::Models(vec![
        ModelEntry::from_path("/models/a.gguf".into()),
        ModelEntry::from_path("/models/b.gguf".into()),
    ]));
    let chosen = t.state.picker.selected_entry().map(|e| e.path.clone());
    assert_eq!(chosen, Some(remote.path));
}

#[test]
fn ctrl_t_without_any_thinking_says_so() {
    let mut t = Test::loaded();
    t.key(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert!(
        t.state
            .status
            .as_deref()
            .is_some_and(|s| s.contains("no answer here has any")),
        "{:?}",
        t.state.status
    );
    let turn = t.ask("hi");
    if let Some((message, _)) = t.state.conversation.answer_mut(turn) {
        message.content = "<think>hm</think>Hello".into();
    }
    t.finish(turn);
    t.key(KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(t.state.status, None);
}
