//! The TUI abused as a person might, with the real binary in tmux: a megabyte pasted into the
//! editor, the window shrunk to 10x5 and back with the picker open and mid-answer, keys
//! pressed while a model loads and while a download runs (from a local hub server), and
//! quitting in every phase: the picker, a load, an answer, a download, an overlay. After every
//! quit: exit code 0, the terminal restored, no panic on the screen or in the log, and the
//! saved sessions intact ([`after_quit`]).
//!
//! Each test runs taper in a home of its own (the test models linked in, an empty hub cache),
//! so its log and saved sessions are its own.

use crate::common;

use crate::hub_server::HubServer;
use crate::tui_support::serial;
use crate::tui_support::tmux::{assert_terminal_restored, shell_command, Tmux};
use std::path::Path;
use std::time::Duration;
use tempfile::TempDir;

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);
const QUICK: Duration = Duration::from_secs(30);
/// Long enough for the app to read and handle a key before the next (an Esc followed at
/// once by a letter would reach it as Alt+letter, as from a real terminal).
const BETWEEN_KEYS: Duration = Duration::from_millis(150);

const SMOL: &str = "SmolLM2-135M-Instruct.Q4_1";
const GEMMA: &str = "gemma-3-270m-q4_k_m";

/// A `TAPER_HOME` of one test's own: the test models (linked), then whatever taper writes
/// there: its log (`taper.log`) and its saved sessions (`sessions/`).
struct Home {
    dir: TempDir,
}

impl Home {
    fn new() -> Self {
        common::real_model(common::SMOLLM2);
        common::real_model(common::GEMMA3);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let models = common::models_dir()
            .canonicalize()
            .expect("the models directory");
        std::os::unix::fs::symlink(&models, dir.path().join("models")).expect("link the models");
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path().join("taper.log")).unwrap_or_default()
    }
}

/// Starts taper with `args` in `home`, its hub at `hub` (else at a port nobody answers),
/// in a `width` x `height` window.
fn start(name: &str, home: &Home, hub: Option<&HubServer>, args: &str, size: (u16, u16)) -> Tmux {
    let endpoint = hub.map_or("http://127.0.0.1:9".to_string(), |h| h.endpoint.clone());
    let dir = home.path().display().to_string();
    // The hub's cache and token file live in the home too: nothing outside it is read.
    let env = format!(
        "RUST_BACKTRACE=1 HF_ENDPOINT='{endpoint}' HF_HOME='{dir}/hf' HF_HUB_CACHE='{dir}/hub' \
         HF_TOKEN="
    );
    Tmux::start(name, &shell_command(&dir, &env, args), size.0, size.1)
}

/// Everything that must hold after taper quits, whatever it was doing.
fn after_quit(tmux: &Tmux, home: &Home) {
    let screen = assert_terminal_restored(tmux, "0");
    assert!(!screen.contains("panicked"), "a panic:\n{screen}");
    let log = home.log();
    assert!(!log.contains("panicked"), "a panic in the log:\n{log}");
    saved_sessions_intact(home.path());
}

/// Saved sessions must survive every way of quitting: every file in `sessions/` reads back as
/// a session, and no temporary file of a save was left behind.
fn saved_sessions_intact(home: &Path) {
    let Ok(entries) = std::fs::read_dir(home.join("sessions")) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // A clean quit leaves no temporary file of an unfinished save behind.
        assert!(
            path.extension().is_some_and(|e| e == "json"),
            "a stray file in sessions/: {}",
            path.display()
        );
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{} is unreadable: {e}", path.display()));
        if let Err(e) = taper::sessions::format::parse_session(&bytes) {
            panic!("{} is not an intact session: {e}", path.display());
        }
    }
}

/// Keys by tmux name, one at a time with a pause after each.
fn press(tmux: &Tmux, keys: &[&str]) {
    for key in keys {
        tmux.keys(&[key]);
        std::thread::sleep(BETWEEN_KEYS);
    }
}

fn resize(tmux: &Tmux, width: u16, height: u16) {
    let out = tmux.run(&[
        "resize-window",
        "-t",
        &tmux.session,
        "-x",
        &width.to_string(),
        "-y",
        &height.to_string(),
    ]);
    assert!(out.status.success(), "tmux resize-window failed");
}

/// Shrinks the window to 10x5, where only the too-small message can show, then restores it.
fn shrink_and_restore(tmux: &Tmux, width: u16, height: u16) {
    resize(tmux, 10, 5);
    tmux.wait_for("the too-small message at 10x5", QUICK, |s| {
        s.contains("terminal") || s.contains("small")
    });
    resize(tmux, width, height);
}

/// The model picker with the test models listed.
fn wait_picker(tmux: &Tmux) -> String {
    tmux.wait_for("the picker with the test models", LOAD, |s| {
        s.contains("Pick a model") && s.contains(SMOL) && s.contains(GEMMA)
    })
}

/// Idle with `model` loaded.
fn wait_loaded(tmux: &Tmux, model: &str) {
    tmux.wait_text(&format!("Loaded {model}"), LOAD);
    tmux.wait_text("phase    idle", QUICK);
}

/// About a megabyte of text in lines, ending with a line that says so.
fn megabyte() -> String {
    let mut text = String::with_capacity(1 << 20);
    let mut i = 0;
    while text.len() < 1 << 20 {
        text.push_str(&format!(
            "paste line {i:06}: the quick brown fox jumps over the lazy dog, and again.\n"
        ));
        i += 1;
    }
    text.push_str("END-OF-PASTE");
    text
}

/// The editor's text lines (between its top border and the footer).
fn editor(screen: &str) -> String {
    screen
        .lines()
        .skip_while(|l| !l.starts_with('┌') || !l.contains("message"))
        .skip(1)
        .take_while(|l| !l.starts_with('└'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_pasted_megabyte_can_be_cleared_and_the_chat_goes_on() {
    let _serial = serial();
    let home = Home::new();
    let args = format!("chat -m {SMOL} --temperature 0 -n 8");
    let tmux = start("paste", &home, None, &args, (100, 30));
    wait_loaded(&tmux, SMOL);

    // A bracketed paste of a megabyte: it lands in the editor, and nothing is sent.
    let file = home.path().join("paste.txt");
    std::fs::write(&file, megabyte()).expect("write the paste");
    let path = file.display().to_string();
    assert!(tmux
        .run(&["load-buffer", "-b", "big", &path])
        .status
        .success());
    tmux.run(&["paste-buffer", "-p", "-b", "big", "-t", "paste"]);
    let screen = tmux.wait_for("the end of the paste in the editor", ANSWER, |s| {
        editor(s).contains("END-OF-PASTE")
    });
    assert!(!screen.contains("You"), "the paste was sent:\n{screen}");

    // Still responsive: typing goes after it and can be deleted; undo (Ctrl+_, one step per
    // edit) takes back the deletions, the typing, then the whole paste at once.
    tmux.type_text("xyz");
    tmux.wait_for("typing after the paste", QUICK, |s| {
        editor(s).contains("END-OF-PASTExyz")
    });
    press(&tmux, &["BSpace", "BSpace", "BSpace"]);
    tmux.wait_for("the typing deleted", QUICK, |s| {
        let e = editor(s);
        e.contains("END-OF-PASTE") && !e.contains("END-OF-PASTEx")
    });
    press(&tmux, &["C-_", "C-_", "C-_"]);
    tmux.wait_for("the deletions undone", QUICK, |s| {
        editor(s).contains("END-OF-PASTExyz")
    });
    press(&tmux, &["C-_", "C-_", "C-_"]);
    tmux.wait_for("the typing undone", QUICK, |s| {
        let e = editor(s);
        e.contains("END-OF-PASTE") && !e.contains("END-OF-PASTEx")
    });
    press(&tmux, &["C-_"]);
    tmux.wait_for("an empty editor", QUICK, |s| {
        editor(s).contains("Ask anything")
    });

    // The chat goes on.
    tmux.type_text("Say hello.");
    press(&tmux, &["Enter"]);
    tmux.wait_for("the answer", ANSWER, |s| {
        s.contains(&format!("{SMOL} · ")) && s.contains("phase    idle") && !s.contains("writing…")
    });

    // Sent, the megabyte is far too long for the context: the answer fails with the reason,
    // and the chat stays usable.
    tmux.run(&["paste-buffer", "-p", "-b", "big", "-t", "paste"]);
    tmux.wait_for("the second paste in the editor", ANSWER, |s| {
        editor(s).contains("END-OF-PASTE")
    });
    press(&tmux, &["Enter"]);
    let screen = tmux.wait_for("the too-long message refused", ANSWER, |s| {
        s.contains("raise --ctx-size") && s.contains("phase    idle")
    });
    eprintln!("after sending a megabyte:\n{screen}");
    tmux.type_text("still here");
    tmux.wait_for("typing after the refusal", QUICK, |s| {
        editor(s).contains("still here")
    });

    // Quit from an overlay: the settings.
    press(&tmux, &["C-s"]);
    tmux.wait_text("Settings (apply to the next answer)", QUICK);
    press(&tmux, &["C-q"]);
    after_quit(&tmux, &home);
    // The answered question was saved, and the session names it.
    let saved: Vec<_> = std::fs::read_dir(home.path().join("sessions"))
        .expect("a sessions directory")
        .flatten()
        .collect();
    assert_eq!(saved.len(), 1, "one conversation, one session file");
}

#[test]
fn shrinking_to_ten_by_five_in_the_picker_and_mid_answer_then_quitting_mid_answer() {
    let _serial = serial();
    let home = Home::new();
    let args = "chat --temperature 0 -n 2000";
    let tmux = start("resize", &home, None, args, (100, 30));
    wait_picker(&tmux);

    // With the picker open.
    shrink_and_restore(&tmux, 100, 30);
    wait_picker(&tmux);

    tmux.type_text("smol");
    tmux.wait_text("filter: smol", QUICK);
    press(&tmux, &["Enter"]);
    wait_loaded(&tmux, SMOL);

    // Mid-answer: a long answer is streaming. (Greedy, this prompt runs past 400 tokens with
    // every kernel implementation; "count to 1000" stopped after a sentence on some, as
    // near-tied logits go one way or the other.)
    tmux.type_text("Explain in great detail how a car engine works, step by step.");
    press(&tmux, &["Enter"]);
    tmux.wait_text("writing…", ANSWER);
    shrink_and_restore(&tmux, 100, 30);
    let screen = tmux.wait_for("the whole screen redrawn", QUICK, |s| {
        s.contains("Explain in great detail")
            && s.contains(&format!("{SMOL} · "))
            && s.contains("│ phase")
            && s.contains("Ctrl+Q quit")
    });
    assert!(
        !screen.contains("too small"),
        "the too-small message stayed:\n{screen}"
    );
    // Still mid-answer (it is a long one), and quitting now.
    tmux.wait_text("writing…", QUICK);
    press(&tmux, &["C-q"]);
    after_quit(&tmux, &home);
}

#[test]
fn keys_during_a_load_and_a_download_then_quitting_during_the_download() {
    let _serial = serial();
    let home = Home::new();
    let hub = HubServer::start_trickle();
    let args = "chat --temperature 0 -n 8";
    let tmux = start("keys", &home, Some(&hub), args, (110, 32));
    wait_picker(&tmux);

    // Gemma takes the longest to load: the keys right after Enter land while it loads (a
    // load can still win the race on a fast machine; the keys must work either way).
    tmux.type_text("gemma");
    tmux.wait_text("filter: gemma", QUICK);
    press(
        &tmux,
        &[
            "Enter", "Enter", "C-p", "Escape", "h", "i", "C-s", "Escape", "Enter",
        ],
    );
    // The picker opened and closed, the settings opened and closed, and "hi" was sent (to
    // the model being loaded, which answers once it is ready).
    let screen = tmux.wait_for("the answer to hi", ANSWER, |s| {
        s.contains(&format!("Loaded {GEMMA}"))
            && s.contains(&format!("{GEMMA} · "))
            && s.contains("phase    idle")
            && !s.contains("writing…")
    });
    assert!(
        !screen.contains("Pick a model") && !screen.contains("Settings (apply"),
        "an overlay stayed open:\n{screen}"
    );
    assert!(
        screen.lines().any(|l| l.starts_with("│ hi ")),
        "the question is not shown:\n{screen}"
    );

    // A download from the (slow) local hub: a catalogue model that is not here.
    press(&tmux, &["C-p"]);
    wait_picker(&tmux);
    tmux.type_text("qwen3-0.6b");
    tmux.wait_text("filter: qwen3-0.6b", QUICK);
    press(&tmux, &["Enter"]);
    tmux.wait_text("downloading qwen3-0.6b", QUICK);

    // Keys while it runs: a question (the loaded model answers it), the picker, the
    // settings, typing; the download goes on.
    tmux.type_text("Say one word.");
    press(&tmux, &["Enter"]);
    // (The phase row shows the download meanwhile, not whether the answer is done.)
    tmux.wait_for("the second answer", ANSWER, |s| {
        s.contains("Say one word.")
            && s.matches(&format!("{GEMMA} · ")).count() == 2
            && !s.contains("writing…")
    });
    press(&tmux, &["C-p", "Escape", "C-s", "Escape", "a", "b", "c"]);
    let screen = tmux.wait_for("typing during the download", QUICK, |s| {
        editor(s).contains("abc")
    });
    assert!(
        screen.contains("downloading qwen3-0.6b"),
        "the download stopped:\n{screen}"
    );
    assert!(
        !screen.contains("Pick a model") && !screen.contains("Settings (apply"),
        "an overlay stayed open:\n{screen}"
    );
    press(&tmux, &["C-q"]);
    after_quit(&tmux, &home);
    assert!(
        hub.log.lock().map(|l| !l.is_empty()).unwrap_or(false),
        "the download never reached the local hub"
    );
}

#[test]
fn quitting_in_the_picker() {
    let _serial = serial();
    let home = Home::new();
    let tmux = start("picker", &home, None, "", (100, 30));
    wait_picker(&tmux);
    press(&tmux, &["C-q"]);
    after_quit(&tmux, &home);
}

#[test]
fn quitting_during_a_load_from_the_picker() {
    let _serial = serial();
    let home = Home::new();
    let tmux = start("load", &home, None, "", (100, 30));
    wait_picker(&tmux);
    tmux.type_text("gemma");
    tmux.wait_text("filter: gemma", QUICK);
    // Enter starts the load; Ctrl+Q follows at once, in the same write.
    tmux.keys(&["Enter", "C-q"]);
    after_quit(&tmux, &home);
}

#[test]
fn quitting_in_the_help_overlay() {
    let _serial = serial();
    let home = Home::new();
    let args = format!("chat -m {SMOL}");
    let tmux = start("help", &home, None, &args, (100, 30));
    wait_loaded(&tmux, SMOL);
    press(&tmux, &["F1"]);
    tmux.wait_text("Keys", QUICK);
    press(&tmux, &["C-q"]);
    after_quit(&tmux, &home);
}
