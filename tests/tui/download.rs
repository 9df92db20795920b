//! Choosing a catalogue model that is not downloaded yet: the picker downloads it (with a
//! gauge), Esc stops the download, and the model loads when it arrives.

use crate::tui_support::*;
use crossterm::event::KeyCode;
use taper::engine::EngineCommand;
use taper::hub::HubFile;
use taper::tui::state::Overlay;
use taper::tui::{Effect, Msg};

fn catalogue_entry() -> taper::tui::state::ModelEntry {
    let mut e = entry("qwen3-0.6b", "qwen3", "Q4_K_M", 396_705_472);
    e.download = Some(HubFile::new(
        "unsloth/Qwen3-0.6B-GGUF",
        "Qwen3-0.6B-Q4_K_M.gguf",
    ));
    e
}

fn pick(h: &mut Harness) -> Vec<Effect> {
    h.send(ctrl('p'));
    h.send(Msg::Models(vec![catalogue_entry()]));
    h.send(key(KeyCode::Enter))
}

#[test]
fn choosing_a_model_that_is_not_downloaded_starts_a_download() {
    let mut h = Harness::with_model();
    let fx = pick(&mut h);
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Download(f) if f.repo == "unsloth/Qwen3-0.6B-GGUF")),
        "{fx:?}"
    );
    assert!(!fx
        .iter()
        .any(|e| matches!(e, Effect::Send(EngineCommand::Load(_)))));
    assert_eq!(h.state.overlay, Overlay::None);
    let d = h
        .state
        .model
        .download
        .as_ref()
        .expect("a download is shown");
    assert_eq!((d.done, d.total), (0, 396_705_472));
}

#[test]
fn progress_moves_the_gauge() {
    let mut h = Harness::with_model();
    pick(&mut h);
    h.send(Msg::DownloadProgress {
        done: 100,
        total: 400,
    });
    let d = h.state.model.download.as_ref().unwrap();
    assert_eq!((d.done, d.total), (100, 400));
    assert!(h.state.busy());
}

#[test]
fn esc_stops_the_download_and_the_failure_is_shown() {
    let mut h = Harness::with_model();
    pick(&mut h);
    let fx = h.send(key(KeyCode::Esc));
    assert!(
        fx.iter().any(|e| matches!(e, Effect::CancelDownload)),
        "{fx:?}"
    );
    h.send(Msg::DownloadFailed(
        "the download of x was cancelled".into(),
    ));
    assert!(h.state.model.download.is_none());
    let last = h.state.conversation.entries.last().unwrap();
    assert!(
        format!("{:?}", last.body).contains("cancelled"),
        "{:?}",
        last.body
    );
}

#[test]
fn a_finished_download_loads_the_model() {
    let mut h = Harness::with_model();
    pick(&mut h);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Qwen3-0.6B-Q4_K_M.gguf");
    std::fs::write(&path, b"not really a model").unwrap();
    // The header is read by the app (off the UI thread), not by `update`.
    let fx = h.send(Msg::Downloaded(path.clone()));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::ReadHeader(p) if *p == path)),
        "{fx:?}"
    );
    assert!(!fx
        .iter()
        .any(|e| matches!(e, Effect::Send(EngineCommand::Load(_)))));
    let fx = h.send(Msg::HeaderRead(taper::tui::scan::describe(&path)));
    let load = fx.iter().find_map(|e| match e {
        Effect::Send(EngineCommand::Load(l)) => Some(l),
        _ => None,
    });
    assert_eq!(load.map(|l| &l.model_path), Some(&path));
    assert!(h.state.model.download.is_none());
    assert_eq!(h.state.model.answering_name(), Some("qwen3-0.6b"));
}

#[test]
fn a_second_download_waits_for_the_first() {
    let mut h = Harness::with_model();
    pick(&mut h);
    let fx = pick(&mut h);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Download(_))),
        "{fx:?}"
    );
    assert!(h.state.status.as_deref().unwrap_or("").contains("already"));
}

#[test]
fn the_stats_panel_shows_a_download_gauge_with_bytes() {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use taper::tui::ui::{render, ChatCache};
    let mut h = Harness::with_model();
    pick(&mut h);
    h.send(Msg::DownloadProgress {
        done: 198_352_736,
        total: 396_705_472,
    });
    let mut terminal = Terminal::new(TestBackend::new(110, 34)).unwrap();
    let mut cache = ChatCache::default();
    terminal
        .draw(|f| {
            h.state.viewport = render(f, &h.state, &mut cache);
        })
        .unwrap();
    let screen: String = terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(screen.contains("downloading qwen3-0.6b"), "{screen}");
    assert!(screen.contains("50% · "), "{screen}");
    assert!(screen.contains("stop download"), "{screen}");
}

#[test]
fn a_header_for_another_file_loads_nothing() {
    let mut h = Harness::with_model();
    pick(&mut h);
    h.send(Msg::Downloaded("/cache/Qwen3-0.6B-Q4_K_M.gguf".into()));
    let other = entry("other", "llama", "Q4_0", 1);
    let fx = h.send(Msg::HeaderRead(other));
    assert!(fx.is_empty(), "{fx:?}");
    assert!(
        h.state.model.download.is_some(),
        "still waiting for its own header"
    );
}
