//! Lending the terminal out while the chat goes on, with the real binary in tmux: Ctrl+Z
//! suspends it to a job-control shell (the terminal as the shell had it, an answer being
//! written not stopped) and `fg` brings the screen back whole; Alt+M turns mouse capture
//! off so the terminal can select text, and on again.

use crate::e2e::fresh_home;
use crate::tui_support::serial;
use crate::tui_support::tmux::{
    assert_terminal_restored, binary, shell_command, Tmux, REPORT_EXIT_AND_TTY,
};
use std::time::Duration;

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);
const QUICK: Duration = Duration::from_secs(30);

const MODEL: &str = "SmolLM2-135M-Instruct.Q4_1";

/// The line a shell prints for `echo "$label $(stty ...)"`: the line discipline's `icanon`
/// and `echo` flags, `-` in front of each that is off (raw mode).
fn modes(tmux: &Tmux, label: &str) -> String {
    tmux.type_text(&format!(
        "echo \"{label} $(stty -a | grep -ow -- '-\\?icanon\\|-\\?echo' | tr '\\n' ' ')\""
    ));
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the terminal's modes", QUICK, |s| {
        s.lines().any(|l| l.starts_with(&format!("{label} ")))
    });
    let line = screen.lines().find(|l| l.starts_with(&format!("{label} ")));
    line.unwrap_or_default().to_string()
}

#[test]
fn ctrl_z_suspends_to_the_shell_mid_answer_and_fg_brings_the_chat_back() {
    let _serial = serial();
    let home = fresh_home();
    // An interactive shell, for job control (`sh -c` has none: the stop would be dropped).
    let tmux = Tmux::start("suspend", "PS1='$ ' sh -i", 120, 40);
    tmux.wait_for("the prompt", QUICK, |s| s.starts_with('$'));
    tmux.type_text(&format!(
        "TAPER_HOME='{}' '{}' chat -m {MODEL} --temperature 0 --max-tokens 1500",
        home.path().display(),
        binary()
    ));
    tmux.keys(&["Enter"]);
    tmux.wait_text(&format!("Loaded {MODEL}"), LOAD);
    tmux.wait_text("phase    idle", QUICK);
    tmux.type_text("Write a long story about a cat who learns to sail.");
    tmux.keys(&["Enter"]);
    // A long answer, so it is still being written when the shell takes over.
    tmux.wait_text("· writing…", ANSWER);

    tmux.keys(&["C-z"]);
    let stopped = tmux.wait_text("Stopped", QUICK);
    eprintln!("suspended:\n{stopped}");
    assert_eq!(tmux.format("#{alternate_on}"), "0", "still full-screen");
    assert_eq!(
        tmux.format("#{mouse_any_flag}"),
        "0",
        "mouse still reported"
    );
    assert_eq!(tmux.format("#{cursor_flag}"), "1", "the cursor is hidden");
    let tty = modes(&tmux, "STOPPED");
    assert!(
        tty.contains(" icanon") && tty.contains(" echo") && !tty.contains("-icanon"),
        "the terminal is left raw: {tty}"
    );
    tmux.type_text("jobs");
    tmux.keys(&["Enter"]);
    tmux.wait_for("jobs to list it", QUICK, |s| {
        s.lines().filter(|l| l.contains("Stopped")).count() >= 2
    });

    tmux.type_text("fg");
    tmux.keys(&["Enter"]);
    // The answer ran on to its limit: not stopped, nothing lost.
    let back = tmux.wait_text("cut at the limit of 1500 tokens", ANSWER);
    eprintln!("after fg:\n{back}");
    tmux.wait_text("phase    idle", QUICK);
    assert!(
        !back.contains("Stopped"),
        "the shell's lines show through:\n{back}"
    );
    assert_eq!(tmux.format("#{alternate_on}"), "1");
    assert_eq!(tmux.format("#{mouse_any_flag}"), "1");
    // Keys work again.
    tmux.type_text("still here");
    tmux.wait_text("still here", QUICK);

    tmux.keys(&["C-q"]);
    // Typed only once the shell has its prompt back, so taper cannot read the line.
    tmux.wait_for("the shell's prompt", QUICK, |s| {
        tmux.format("#{alternate_on}") == "0"
            && s.lines().rev().find(|l| !l.trim().is_empty()) == Some("$")
    });
    tmux.type_text(REPORT_EXIT_AND_TTY);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the exit report", QUICK, |s| {
        s.lines().any(|l| l.starts_with("TTY "))
    });
    assert_terminal_restored(&tmux, "0");
}

#[test]
fn alt_m_turns_mouse_capture_off_for_selecting_text_and_on_again() {
    let _serial = serial();
    let home = fresh_home();
    let args = format!("chat -m {MODEL}");
    let command = shell_command(&home.path().display().to_string(), "", &args);
    let tmux = Tmux::start("mouse", &command, 120, 40);
    tmux.wait_text("phase    idle", LOAD);
    assert_eq!(tmux.format("#{mouse_any_flag}"), "1");

    tmux.keys(&["M-m"]);
    tmux.wait_text("Mouse off: select text with the mouse", QUICK);
    assert_eq!(tmux.format("#{mouse_any_flag}"), "0");

    tmux.keys(&["M-m"]);
    tmux.wait_text("Mouse on", QUICK);
    assert_eq!(tmux.format("#{mouse_any_flag}"), "1");

    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
}
