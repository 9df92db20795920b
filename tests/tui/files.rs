//! Files and slash commands as a person uses them, with SmolLM2 in tmux: `@` and Tab complete a
//! real file's path, the editor shows its token count, the answer's question holds the file as
//! a fenced block (on screen and in the saved session); a file larger than the context and a
//! binary file are refused with one line and nothing is sent; `/set`, `/system`, `/save` and
//! `/help` do what they say, and an unknown command is kept with a hint.

use crate::tui_support::serial;
use crate::tui_support::tmux::{assert_terminal_restored, idle, shell_command, Tmux};
use std::time::Duration;
use taper::chat::Role;
use taper::sessions::store;

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);
const QUICK: Duration = Duration::from_secs(30);

/// Empties the editor of `typed` with backspaces.
fn erase(tmux: &Tmux, typed: &str) {
    let presses = vec!["BSpace"; typed.chars().count() + 2];
    tmux.keys(&presses);
    tmux.wait_for("the editor to be empty", QUICK, |s| !s.contains(typed));
}

#[test]
fn files_come_in_with_at_and_tab_and_what_cannot_go_is_refused_in_one_line() {
    let _serial = serial();
    let home = crate::e2e::fresh_home();
    let home_s = home.path().display().to_string();
    let files = tempfile::tempdir().expect("a temporary directory");
    let dir = files.path().display().to_string();
    std::fs::write(
        files.path().join("notes.txt"),
        "The secret word is pineapple.\n",
    )
    .unwrap();
    std::fs::write(files.path().join("big.txt"), "lorem ipsum ".repeat(4000)).unwrap();
    std::fs::write(files.path().join("logo.bin"), [0x89, b'P', 0, 0, 1, 2]).unwrap();

    let args = "chat -m SmolLM2-135M-Instruct.Q4_1 --temperature 0 --max-tokens 8 --ctx-size 1024";
    let tmux = Tmux::start("files", &shell_command(&home_s, "", args), 160, 45);
    tmux.wait_text("Loaded SmolLM2-135M-Instruct.Q4_1", LOAD);
    tmux.wait_text("phase    idle", QUICK);

    // A command that is not one stays in the editor, with a hint.
    tmux.type_text("/sett temperature 0.3");
    tmux.keys(&["Enter"]);
    tmux.wait_text("did you mean /set?", QUICK);
    erase(&tmux, "/sett temperature 0.3");
    tmux.type_text("/set temperature 0.3");
    tmux.keys(&["Enter"]);
    tmux.wait_text("temperature = 0.3 (from the next answer)", QUICK);
    tmux.type_text("/system Be brief.");
    tmux.keys(&["Enter"]);
    tmux.wait_text("System prompt set", QUICK);

    // Tab completes the path; the editor's border shows the file and its tokens.
    let question = "What is the secret word?";
    tmux.type_text(&format!("{question} @{dir}/no"));
    tmux.keys(&["Tab"]);
    // A file's name is completed with the space after it, as a shell does.
    tmux.wait_text(&format!("@{dir}/notes.txt"), QUICK);
    let screen = tmux.wait_for("the file's token count", QUICK, |s| {
        s.contains(&format!("@{dir}/notes.txt ")) && s.contains(" tokens ")
    });
    eprintln!("attached:\n{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("the answer", ANSWER, |s| {
        idle(s) && s.contains("SmolLM2-135M-Instruct.Q4_1 · ")
    });
    eprintln!("answered:\n{screen}");
    assert!(screen.contains("The secret word is pineapple."), "{screen}");
    let listed = store::list(&home.path().join("sessions"));
    let session = store::load(&listed[0].path).expect("saved");
    let question_sent = session
        .path()
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .expect("the question");
    assert_eq!(
        question_sent,
        format!(
            "{question} @{dir}/notes.txt\n\n{dir}/notes.txt\n```txt\nThe secret word is pineapple.\n```"
        )
    );
    assert_eq!(session.system_prompt, "Be brief.");
    let answer = session
        .path()
        .into_iter()
        .find(|m| m.role == Role::Assistant);
    let sampling = answer
        .and_then(|m| m.sampling.clone())
        .expect("its settings");
    assert_eq!(sampling.temperature, 0.3);

    // Larger than the context: refused with the numbers, the text kept.
    let big = format!("Summarize @{dir}/big.txt ");
    tmux.type_text(&big);
    tmux.wait_text("left: too long", QUICK);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("The files' ", QUICK);
    eprintln!("too long:\n{screen}");
    assert!(
        screen.contains("do not fit: the context holds 1024 tokens"),
        "{screen}"
    );
    erase(&tmux, &big);

    // Binary: one line, nothing sent.
    let binary = format!("Describe @{dir}/logo.bin ");
    tmux.type_text(&binary);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("is a binary file, not text: remove it", QUICK);
    eprintln!("binary:\n{screen}");
    erase(&tmux, &binary);

    // /save names it; /help shows the commands beside the keys.
    tmux.type_text("/save Pineapple");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Saved as “Pineapple”", QUICK);
    tmux.wait_for("the title saved", QUICK, |_| {
        store::load(&listed[0].path).is_ok_and(|s| s.title == "Pineapple")
    });
    tmux.type_text("/help");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_text("Commands", QUICK);
    assert!(screen.contains("/file PATH"), "{screen}");
    tmux.keys(&["Escape"]);
    let session = store::load(&listed[0].path).expect("saved");
    assert_eq!(session.path().len(), 2, "nothing more was sent");
    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
}
