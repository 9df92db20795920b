//! Models kept loaded, as a person meets them in tmux: SmolLM2 answers, Gemma 3 answers the
//! same conversation, and the switch back to SmolLM2 loads nothing: the picker marks it kept
//! loaded, the stats panel shows a switch instead of a load, and its next answer reads only
//! what is new (the stats panel's cached tokens cover its first turn).

use crate::tui_support::serial;
use crate::tui_support::tmux::{assert_terminal_restored, idle, shell_command, stat, Tmux};
use std::time::Duration;

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);
const QUICK: Duration = Duration::from_secs(30);

/// Asks `question` and waits for `model`'s answer to end; returns the screen.
fn ask(tmux: &Tmux, question: &str, model: &str) -> String {
    tmux.type_text(question);
    tmux.keys(&["Enter"]);
    let label = format!("{model} · ");
    tmux.wait_for("the answer", ANSWER, |s| {
        idle(s) && s.matches(&label).count() >= 1 && s.contains(question)
    })
}

/// Picks the model whose name contains `filter` in the picker; returns the picker's screen.
fn pick(tmux: &Tmux, filter: &str) -> String {
    tmux.keys(&["C-p"]);
    tmux.wait_text("Pick a model", QUICK);
    tmux.type_text(filter);
    let picker = tmux.wait_text(&format!("filter: {filter}"), QUICK);
    tmux.keys(&["Enter"]);
    picker
}

#[test]
fn switching_back_to_a_model_kept_loaded_costs_no_load() {
    let _serial = serial();
    let home = crate::e2e::fresh_home();
    let home_s = home.path().display().to_string();
    let smol = "SmolLM2-135M-Instruct.Q4_1";
    let gemma = "gemma-3-270m-q4_k_m";
    let args = format!("chat -m {smol} --temperature 0 --max-tokens 12");
    let tmux = Tmux::start("resident", &shell_command(&home_s, "", &args), 120, 40);
    tmux.wait_text(&format!("Loaded {smol}"), LOAD);
    tmux.wait_text("phase    idle", QUICK);
    let first = ask(&tmux, "Name a colour of the rainbow.", smol);
    // The context used after the first turn: its prompt and answer.
    let first_turn = stat(&first, "context").expect("the context used");

    pick(&tmux, "gemma");
    tmux.wait_text(&format!("Switched to {gemma}"), LOAD);
    tmux.wait_text("phase    idle", QUICK);
    ask(&tmux, "And another one?", gemma);

    let picker = pick(&tmux, "smol");
    let row = picker
        .lines()
        .skip_while(|l| !l.contains("Pick a model"))
        .find(|l| l.contains(smol))
        .expect("SmolLM2 in the picker");
    assert!(row.contains('○'), "marked kept loaded: {row}\n{picker}");
    let back = tmux.wait_text(&format!("Switched back to {smol}"), QUICK);
    assert!(
        back.contains(&format!(
            "Switched back to {smol} (llama, Q4_1), kept loaded"
        )),
        "{back}"
    );
    assert!(back.contains("│ switch "), "a switch, not a load:\n{back}");

    let third = ask(&tmux, "One more, please.", smol);
    let cached = stat(&third, "cached").expect("cached tokens");
    // All but the last token sampled (fed in with the next turn) come from the kept cache.
    assert!(
        cached >= first_turn - 1.0,
        "the first turn's {first_turn} tokens come from the kept cache:\n{third}"
    );
    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");
}
