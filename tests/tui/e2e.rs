//! End to end, as a person: the real binary in tmux with the real test models. Ask
//! SmolLM2 a question, watch the answer stream in with a decode rate in the stats panel,
//! switch to Gemma 3 in the picker, ask again, see the first answer still there, quit, and
//! check that the terminal is back to normal. Also: quitting mid-load, and a panic, leave the
//! terminal usable; a turn is saved, copied with Ctrl+Y (OSC 52, read back from tmux) and
//! shown again by `taper --resume`.

use crate::common;

use crate::tui_support::serial;
use crate::tui_support::tmux::{assert_terminal_restored, shell_command, stat, Tmux};
use std::time::Duration;

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);
const QUICK: Duration = Duration::from_secs(30);

/// A data directory of its own for each test (its `models` links to the test models), so
/// the sessions a test saves are its own and nothing is written beside the shared models.
fn home() -> tempfile::TempDir {
    common::real_model(common::SMOLLM2);
    common::real_model(common::GEMMA3);
    fresh_home()
}

fn path(home: &tempfile::TempDir) -> String {
    home.path().display().to_string()
}

/// The first line of the message editor.
fn editor(screen: &str) -> &str {
    let mut lines = screen.lines().skip_while(|l| !l.starts_with("┌ message"));
    lines.nth(1).unwrap_or("")
}

#[test]
fn a_person_chats_switches_model_and_quits() {
    let _serial = serial();
    let args = "chat -m SmolLM2-135M-Instruct.Q4_1 --temperature 0 --max-tokens 40";
    let home = home();
    let tmux = Tmux::start("chat", &shell_command(&path(&home), "", args), 120, 40);
    tmux.wait_text("Loaded SmolLM2-135M-Instruct.Q4_1", LOAD);
    tmux.wait_text("phase    idle", QUICK);

    // A multi-line paste goes into the editor and is not sent.
    tmux.paste("What is the capital\nof France?");
    let screen = tmux.wait_text("of France?", QUICK);
    assert!(!screen.contains("You"), "the paste was sent:\n{screen}");
    tmux.keys(&["Enter"]);

    // The answer streams in: seen mid-answer, then finished with a decode rate.
    let mid = tmux.wait_for("the answer to start", ANSWER, |s| {
        s.contains("· writing…")
            || s.contains(" tok/s\n")
            || s.contains("SmolLM2-135M-Instruct.Q4_1 · ")
    });
    eprintln!("mid-answer:\n{mid}");
    let done = tmux.wait_for("the first answer to finish", ANSWER, |s| {
        s.contains("SmolLM2-135M-Instruct.Q4_1 · ")
            && s.contains("phase    idle")
            && !s.contains("writing…")
    });
    eprintln!("first answer:\n{done}");
    let decode = stat(&done, "decode").expect("a decode rate in the stats panel");
    assert!(decode > 0.0, "decode rate {decode}\n{done}");
    let label = done
        .lines()
        .position(|l| l.contains("SmolLM2-135M-Instruct.Q4_1 · ") && l.contains("tok/s"))
        .expect("the answer is labelled with its model and rate");
    let first_line = done.lines().nth(label + 1).unwrap_or("");
    assert!(
        first_line.chars().filter(|c| c.is_alphabetic()).count() > 2,
        "the answer has text: {first_line:?}\n{done}"
    );

    // Up on the empty editor recalls the question; Down goes back to an empty editor.
    tmux.keys(&["Up"]);
    tmux.wait_for("the recalled question", QUICK, |s| {
        editor(s).contains("What is the capital")
    });
    tmux.keys(&["Down"]);
    tmux.wait_text("Ask anything", QUICK);

    // The picker lists both models; filtering and Enter load Gemma.
    tmux.keys(&["C-p"]);
    let picker = tmux.wait_text("Pick a model", QUICK);
    let picker = if picker.contains("gemma-3-270m-q4_k_m") {
        picker
    } else {
        tmux.wait_text("gemma-3-270m-q4_k_m", QUICK)
    };
    assert!(
        picker.contains("gemma3") && picker.contains("llama"),
        "{picker}"
    );
    tmux.type_text("gemma");
    tmux.wait_text("filter: gemma", QUICK);
    tmux.keys(&["Enter"]);
    let switched = tmux.wait_text("Switched to gemma-3-270m-q4_k_m", LOAD);
    assert!(
        switched.contains("chat template"),
        "the built-in template notice: {switched}"
    );
    tmux.wait_text("phase    idle", QUICK);

    tmux.type_text("What is the capital of Italy?");
    tmux.keys(&["Enter"]);
    let second = tmux.wait_for("the second answer", ANSWER, |s| {
        s.contains("gemma-3-270m-q4_k_m · ")
            && s.contains("tok/s")
            && s.contains("phase    idle")
            && !s.contains("writing…")
    });
    eprintln!("second answer:\n{second}");
    assert!(
        second.contains("What is the capital"),
        "first question gone:\n{second}"
    );
    assert!(
        second.contains("SmolLM2-135M-Instruct.Q4_1 · "),
        "first answer gone:\n{second}"
    );
    assert!(second.contains("What is the capital of Italy?"), "{second}");
    assert!(stat(&second, "decode").unwrap_or(0.0) > 0.0, "{second}");

    // A terminal too small gets a message; back to a good size, everything is redrawn.
    tmux.run(&["resize-window", "-t", "chat", "-x", "44", "-y", "12"]);
    tmux.wait_text("too small", QUICK);
    tmux.run(&["resize-window", "-t", "chat", "-x", "120", "-y", "40"]);
    tmux.wait_text("SmolLM2-135M-Instruct.Q4_1 · ", QUICK);

    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
}

#[test]
fn quitting_while_a_model_loads_restores_the_terminal() {
    let _serial = serial();
    let args = "chat -m gemma-3-270m-q4_k_m";
    let home = home();
    let tmux = Tmux::start("load", &shell_command(&path(&home), "", args), 100, 30);
    tmux.wait_text("loading", LOAD);
    tmux.keys(&["C-c"]);
    assert_terminal_restored(&tmux, "0");
}

#[test]
fn a_panic_restores_the_terminal_before_its_message() {
    let _serial = serial();
    let args = "chat -m SmolLM2-135M-Instruct.Q4_1";
    let home = home();
    let command = shell_command(&path(&home), "RUST_BACKTRACE=0 TAPER_TEST_PANIC=1", args);
    let tmux = Tmux::start("panic", &command, 100, 30);
    let screen = assert_terminal_restored(&tmux, "101");
    assert!(
        screen.contains("TAPER_TEST_PANIC"),
        "the panic message is shown:\n{screen}"
    );
}

#[test]
fn taper_alone_opens_the_model_picker() {
    let _serial = serial();
    let home = home();
    let tmux = Tmux::start("bare", &shell_command(&path(&home), "", ""), 100, 30);
    let picker = tmux.wait_text("Pick a model", LOAD);
    let picker = match picker.contains("gemma-3-270m-q4_k_m") {
        true => picker,
        false => tmux.wait_text("gemma-3-270m-q4_k_m", QUICK),
    };
    assert!(picker.contains("SmolLM2-135M-Instruct.Q4_1"), "{picker}");
    tmux.keys(&["Escape"]);
    tmux.wait_text("No model loaded", QUICK);
    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
}

/// A temporary data directory whose `models` links to the test models.
pub(crate) fn fresh_home() -> tempfile::TempDir {
    let models = common::real_model(common::SMOLLM2)
        .parent()
        .expect("the models directory")
        .to_path_buf();
    let home = tempfile::tempdir().expect("a temporary directory");
    std::os::unix::fs::symlink(&models, home.path().join("models")).expect("a symlink");
    home
}

#[test]
fn a_conversation_is_saved_and_taper_resume_shows_it_again() {
    use taper::sessions::store;
    let _serial = serial();
    let home = home();
    let home_s = path(&home);
    let args = "chat -m SmolLM2-135M-Instruct.Q4_1 --temperature 0 --max-tokens 16";
    let tmux = Tmux::start("save", &shell_command(&home_s, "", args), 120, 40);
    // tmux keeps what programs copy with OSC 52 as a paste buffer when this is on.
    tmux.run(&["set-option", "-s", "set-clipboard", "on"]);
    tmux.wait_text("Loaded SmolLM2-135M-Instruct.Q4_1", LOAD);
    tmux.wait_text("phase    idle", QUICK);
    tmux.type_text("What is the capital of France?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer to finish", ANSWER, |s| {
        s.contains("SmolLM2-135M-Instruct.Q4_1 · ")
            && s.contains("phase    idle")
            && !s.contains("writing…")
    });
    // Ctrl+Y copies the answer through the terminal (OSC 52).
    tmux.keys(&["C-y"]);
    tmux.wait_text("Copied the last answer", QUICK);
    let copied = String::from_utf8_lossy(&tmux.run(&["show-buffer"]).stdout).into_owned();
    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
    drop(tmux);

    let dir = home.path().join("sessions");
    let listed = store::list(&dir);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let saved = store::load(&listed[0].path).expect("the saved session reads back");
    assert_eq!(saved.messages.len(), 2);
    assert_eq!(saved.messages[0].content, "What is the capital of France?");
    let answer = &saved.messages[1];
    assert_eq!(answer.model.as_deref(), Some("SmolLM2-135M-Instruct.Q4_1"));
    let usage = answer.usage.as_ref().expect("the engine's figures");
    assert!(
        usage.generated_tokens > 0 && usage.decode_tok_s > 0.0,
        "{usage:?}"
    );
    assert_eq!(
        copied,
        answer.content.trim(),
        "the clipboard holds the answer"
    );
    let bytes = std::fs::read(&listed[0].path).unwrap();

    // `taper --resume`: the most recent conversation, with the model of its last answer.
    let tmux = Tmux::start("resume", &shell_command(&home_s, "", "--resume"), 120, 40);
    let screen = tmux.wait_text("Loaded SmolLM2-135M-Instruct.Q4_1", LOAD);
    eprintln!("resumed:\n{screen}");
    assert!(screen.contains("Resumed “What is the capital"), "{screen}");
    assert!(
        screen.contains("What is the capital of France?"),
        "{screen}"
    );
    assert!(screen.contains("SmolLM2-135M-Instruct.Q4_1 · "), "{screen}");
    let first_word = answer.content.split_whitespace().next().unwrap_or("");
    assert!(
        screen.contains(first_word),
        "{first_word:?} not on\n{screen}"
    );
    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
    // Nothing new was said: the file is as it was.
    assert_eq!(std::fs::read(&listed[0].path).unwrap(), bytes);
}
