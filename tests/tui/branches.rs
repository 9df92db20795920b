//! The conversation tree as a person uses it, with SmolLM2 in tmux: three questions, then
//! Alt+↑ to select the second, e to edit it, Enter to send it as a new branch; `‹ 2/2 ›` shows;
//! ← switches back and the first branch's answers are there, unchanged; quit, `--resume`, and
//! the tree is there (both branches in the file, the one on screen restored).

use crate::tui_support::serial;
use crate::tui_support::tmux::{assert_terminal_restored, idle, shell_command, Tmux};
use std::time::Duration;
use taper::chat::Role;
use taper::sessions::store;

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);
const QUICK: Duration = Duration::from_secs(30);

const QUESTIONS: [&str; 3] = ["Name a fruit.", "Name a colour.", "Name a country."];

fn ask(tmux: &Tmux, question: &str) {
    tmux.type_text(question);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer to finish", ANSWER, |s| {
        idle(s) && s.contains(question) && s.contains("SmolLM2-135M-Instruct.Q4_1 · ")
    });
}

/// The one saved session of `home`.
fn saved(home: &tempfile::TempDir) -> taper::sessions::Session {
    let listed = store::list(&home.path().join("sessions"));
    assert_eq!(listed.len(), 1, "{listed:?}");
    store::load(&listed[0].path).expect("the saved session reads back")
}

#[test]
fn an_edit_makes_a_branch_the_old_one_comes_back_and_resume_keeps_the_tree() {
    let _serial = serial();
    let home = crate::e2e::fresh_home();
    let home_s = home.path().display().to_string();
    let args = "chat -m SmolLM2-135M-Instruct.Q4_1 --temperature 0 --max-tokens 12";
    let tmux = Tmux::start("branches", &shell_command(&home_s, "", args), 120, 50);
    tmux.wait_text("Loaded SmolLM2-135M-Instruct.Q4_1", LOAD);
    tmux.wait_text("phase    idle", QUICK);
    for q in QUESTIONS {
        ask(&tmux, q);
    }
    let before = saved(&home);
    assert_eq!(before.messages.len(), 6);

    // Select the second question: the newest message first, then up past q3 and a2.
    tmux.keys(&["M-Up"]);
    tmux.wait_text("selecting a message", QUICK);
    tmux.keys(&["Up", "Up", "Up"]);
    tmux.keys(&["e"]);
    tmux.wait_text("editing an earlier message", QUICK);
    tmux.keys(&["End"]);
    tmux.type_text(" And a shape.");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the edited branch's answer", ANSWER, |s| {
        idle(s) && s.contains("‹ 2/2 ›")
    });
    eprintln!("edited:\n{screen}");
    assert!(screen.contains("Name a colour. And a shape."), "{screen}");
    assert!(
        !screen.contains("Name a country."),
        "the old branch's later turn is still shown:\n{screen}"
    );

    // Back to the first branch: its answers, unchanged.
    tmux.keys(&["M-Up", "Up"]);
    tmux.keys(&["Left"]);
    let screen = tmux.wait_text("‹ 1/2 ›", QUICK);
    eprintln!("switched back:\n{screen}");
    assert!(screen.contains("Name a country."), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the switch to be saved", QUICK, |_| {
        saved(&home).path().len() == 6
    });
    let after = saved(&home);
    assert_eq!(after.messages.len(), 8, "both branches are in the file");
    let path: Vec<(Role, &str)> = after
        .path()
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    let first: Vec<(Role, &str)> = before
        .messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(path, first, "the first branch came back unchanged");
    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
    drop(tmux);

    // Resumed: the branch on screen, with its sibling marker, and the other one a key away.
    let tmux = Tmux::start(
        "branches-resume",
        &shell_command(&home_s, "", "--resume"),
        120,
        50,
    );
    let screen = tmux.wait_text("Loaded SmolLM2-135M-Instruct.Q4_1", LOAD);
    eprintln!("resumed:\n{screen}");
    assert!(screen.contains("(1 fork)"), "{screen}");
    assert!(screen.contains("‹ 1/2 ›"), "{screen}");
    assert!(screen.contains("Name a country."), "{screen}");
    tmux.keys(&["M-Up", "Up", "Up", "Up", "Right"]);
    let screen = tmux.wait_text("‹ 2/2 ›", QUICK);
    assert!(screen.contains("And a shape."), "{screen}");
    assert!(!screen.contains("Name a country."), "{screen}");
    tmux.keys(&["Escape", "C-q"]);
    assert_terminal_restored(&tmux, "0");
}
