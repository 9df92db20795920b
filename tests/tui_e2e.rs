//! End to end, as a person: the real binary in tmux with the real test models. Ask
//! SmolLM2 a question, watch the answer stream in with a decode rate in the stats panel,
//! switch to Gemma 3 in the picker, ask again, see the first answer still there, quit, and
//! check that the terminal is back to normal. Also: quitting mid-load, and a panic, leave the
//! terminal usable.

mod common;
mod tui_support;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tui_support::tmux::{assert_terminal_restored, shell_command, stat, Tmux};

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);
const QUICK: Duration = Duration::from_secs(30);

/// One at a time: each test runs the model, and the machine may have two cores.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn home() -> String {
    common::real_model(common::SMOLLM2);
    common::real_model(common::GEMMA3);
    let models = common::models_dir();
    let home = models.parent().expect("the models directory has a parent");
    home.display().to_string()
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
    let tmux = Tmux::start("chat", &shell_command(&home(), "", args), 120, 40);
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
    let tmux = Tmux::start("load", &shell_command(&home(), "", args), 100, 30);
    tmux.wait_text("loading", LOAD);
    tmux.keys(&["C-c"]);
    assert_terminal_restored(&tmux, "0");
}

#[test]
fn a_panic_restores_the_terminal_before_its_message() {
    let _serial = serial();
    let args = "chat -m SmolLM2-135M-Instruct.Q4_1";
    let command = shell_command(&home(), "RUST_BACKTRACE=0 TAPER_TEST_PANIC=1", args);
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
    let tmux = Tmux::start("bare", &shell_command(&home(), "", ""), 100, 30);
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
