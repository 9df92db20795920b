//! An answer cut at the token limit, as a person meets it with SmolLM2 in tmux: the answer is
//! marked with the keys that go on or raise the limit; Ctrl+G goes on in place, the cached
//! figure shows the answer was not read again, and the saved answer is the whole text.

use crate::tui_support::serial;
use crate::tui_support::tmux::{assert_terminal_restored, idle, shell_command, stat, Tmux};
use std::time::Duration;
use taper::chat::Role;
use taper::sessions::store;

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);

/// The saved conversation's last answer.
fn saved_answer(home: &tempfile::TempDir) -> String {
    let listed = store::list(&home.path().join("sessions"));
    let session = store::load(&listed[0].path).expect("saved");
    let path = session.path();
    let last = path.last().expect("a message");
    assert_eq!(last.role, Role::Assistant);
    last.content.clone()
}

#[test]
fn ctrl_g_goes_on_with_an_answer_cut_at_the_limit() {
    let _serial = serial();
    let home = crate::e2e::fresh_home();
    let home_s = home.path().display().to_string();
    let args = "chat -m SmolLM2-135M-Instruct.Q4_1 --temperature 0 --max-tokens 8";
    let tmux = Tmux::start("continue", &shell_command(&home_s, "", args), 120, 40);
    tmux.wait_text("Loaded SmolLM2-135M-Instruct.Q4_1", LOAD);
    tmux.wait_text("phase    idle", Duration::from_secs(30));
    tmux.type_text("Describe the water cycle in three sentences.");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the cut answer", ANSWER, |s| {
        idle(s) && s.contains("✂ cut at the limit of 8 tokens")
    });
    assert!(screen.contains("Ctrl+G continues"), "{screen}");
    let cut = saved_answer(&home);

    tmux.keys(&["C-g"]);
    let screen = tmux.wait_for("the continued answer", ANSWER, |s| {
        idle(s) && stat(s, "cached").is_some_and(|c| c > 0.0) && saved_answer(&home) != cut
    });
    eprintln!("continued:\n{screen}");
    let whole = saved_answer(&home);
    assert!(
        whole.starts_with(&cut) && whole.len() > cut.len(),
        "{cut:?} → {whole:?}"
    );
    assert_eq!(
        screen.matches("SmolLM2-135M-Instruct.Q4_1 · ").count(),
        1,
        "one answer, grown in place:\n{screen}"
    );
    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
}
