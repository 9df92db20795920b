//! Remote models in the TUI. Through `update`: a conversation moves local → remote → local
//! with every message sent each time, the answers are saved under `NAME/MODEL`, and the key
//! is in no saved byte. End to end in tmux against a real llama-server: pick the remote model
//! in the picker, chat, and see the stats panel show the rates measured here and the server's.

use crate::common;
use crate::llama_server;
use crate::tui_support;

use crate::tui_support::tmux::{assert_terminal_restored, shell_command, stat, Tmux};
use crate::tui_support::{usage, Harness, SMOL};
use std::path::PathBuf;
use std::time::Duration;
use taper::chat::Role;
use taper::config::RemoteConfig;
use taper::engine::EngineCommand;
use taper::protocol::{EngineEvent, ModelInfo};
use taper::protocol::{ServerFigures, StopReason};
use taper::remote::{RemoteTarget, Secret};
use taper::tui::SessionEffect;
use taper::tui::{Effect, Msg};

const KEY: &str = "sk-never-saved";

fn remote_entry() -> taper::tui::state::ModelEntry {
    let mut remote = RemoteConfig::quick("gpu", "http://127.0.0.1:9/v1").resolve();
    remote.key = Some(Secret::new(KEY));
    taper::tui::scan::remote_entry(RemoteTarget {
        remote,
        model: "big".into(),
    })
}

fn remote_info() -> ModelInfo {
    ModelInfo {
        path: PathBuf::from("gpu/big"),
        name: "gpu/big".into(),
        architecture: "remote".into(),
        quantization: "127.0.0.1:9".into(),
        context_size: 0,
        remote: Some("http://127.0.0.1:9/v1".into()),
        ..tui_support::info("gpu/big", "remote")
    }
}

#[test]
fn local_remote_local_keeps_the_history_and_saves_model_names_not_keys() {
    let mut h = Harness::with_model();
    let first = h.ask("Hi");
    h.tokens(first.turn_id, &["Hello", "!"]);
    h.finish(first.turn_id, usage(10, 0, 2, StopReason::EndOfTurn));

    let fx = h.send(Msg::Load(remote_entry()));
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::Send(EngineCommand::Connect(t)) if t.label() == "gpu/big")));
    h.engine(EngineEvent::Loaded {
        info: remote_info(),
        notices: vec![],
    });
    let second = h.ask("And you?");
    let roles: Vec<Role> = second.messages().iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
    assert_eq!(second.messages()[1].content, "Hello!");
    h.tokens(second.turn_id, &["<think>", "hm", "</think>\n\n", "Fine."]);
    let mut u = usage(20, 0, 3, StopReason::EndOfTurn);
    u.server = Some(Box::new(ServerFigures {
        decode_tok_s: Some(99.0),
        ..ServerFigures::default()
    }));
    h.finish(second.turn_id, u);

    h.send(Msg::Load(tui_support::entry(SMOL, "llama", "Q4_1", 1)));
    h.engine(EngineEvent::Loaded {
        info: tui_support::info(SMOL, "llama"),
        notices: vec![],
    });
    let third = h.ask("Bye");
    assert_eq!(third.messages().len(), 5);
    assert_eq!(third.messages()[3].content, "<think>hm</think>\n\nFine.");

    let saved = h.effects.iter().rev().find_map(|e| match e {
        Effect::Session(SessionEffect::Save { session, .. }) => Some(session.clone()),
        _ => None,
    });
    let saved = saved.expect("the conversation was saved");
    let models: Vec<Option<String>> = saved.messages.iter().map(|m| m.model.clone()).collect();
    assert!(models.contains(&Some("gpu/big".into())), "{models:?}");
    let json = serde_json::to_string(&saved).unwrap();
    assert!(
        !json.contains(KEY) && !json.contains("127.0.0.1:9"),
        "{json}"
    );
}

#[test]
fn a_person_picks_the_remote_model_chats_and_sees_its_rates() {
    let server = llama_server::LlamaServer::start(&common::real_model(common::SMOLLM2));
    let home = tempfile::tempdir().unwrap();
    let models = common::real_model(common::SMOLLM2)
        .parent()
        .unwrap()
        .to_path_buf();
    std::os::unix::fs::symlink(&models, home.path().join("models")).unwrap();
    let config = home.path().join("config.toml");
    let remote = format!("[[remotes]]\nname = \"ls\"\nurl = \"{}\"\n", server.url());
    std::fs::write(&config, remote).unwrap();
    let args = format!(
        "--config '{}' chat --temperature 0 --max-tokens 40",
        config.display()
    );
    let home_s = home.path().display().to_string();
    let tmux = Tmux::start("remote", &shell_command(&home_s, "", &args), 120, 40);

    // The picker opens with the local models at once and the remote's model when it answers.
    tmux.wait_text("Pick a model", Duration::from_secs(60));
    tmux.type_text("ls/");
    tmux.wait_text(
        &format!("ls/{}", llama_server::ALIAS),
        Duration::from_secs(30),
    );
    tmux.keys(&["Enter"]);
    tmux.wait_text(
        &format!("Loaded ls/{}", llama_server::ALIAS),
        Duration::from_secs(30),
    );
    let screen = tmux.wait_text(
        &format!("/ {}", llama_server::CONTEXT),
        Duration::from_secs(10),
    );
    let host = server.root.trim_start_matches("http://");
    assert!(
        screen.contains(&format!("server   {host}")),
        "the server is shown:\n{screen}"
    );

    tmux.type_text("What is the capital of France?");
    tmux.keys(&["Enter"]);
    let done = tmux.wait_for(
        "the answer with the server's rates",
        Duration::from_secs(300),
        |s| s.contains("srv dec") && s.contains("phase    idle"),
    );
    eprintln!("{done}");
    assert!(stat(&done, "decode").is_some_and(|r| r > 0.0), "{done}");
    assert!(
        done.contains("tok/s here"),
        "measured here is labelled:\n{done}"
    );
    assert!(stat(&done, "srv dec").is_some_and(|r| r > 0.0), "{done}");
    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
}
