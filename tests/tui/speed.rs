//! Does the TUI slow the model down? Decode tok/s shown in the TUI's stats panel against
//! `taper ask --stats`, same model, prompt, greedy sampling and threads, alternating runs.
//! A measurement, not a pass/fail gate (docs/design.md: speed is measured, never asserted by
//! a timed test), so it is ignored by default; run it on a quiet machine:
//!
//!     cargo test --release --test tui -- --ignored --nocapture speed::
//!
//! TAPER_SPEED_THREADS (default 2), TAPER_SPEED_RUNS (default 3) and TAPER_SPEED_TOKENS
//! (default 256) change the setup; extra environment for both (e.g. a candle spin limit)
//! can be given in TAPER_SPEED_ENV as `NAME=value NAME=value`; TAPER_TEST_BIN measures another
//! binary than this build's; TAPER_SPEED_TUI_ARGS adds arguments for the TUI (e.g. `--fps 5`).

use crate::common;
use crate::tui_support;

use crate::tui_support::tmux::{shell_command, stat, Tmux};
use std::process::Command;
use std::time::Duration;

const PROMPT: &str = "Write a long story about a dragon who learns to bake bread.";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn extra_env() -> Vec<(String, String)> {
    std::env::var("TAPER_SPEED_ENV")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.into(), v.into())))
        .collect()
}

fn home() -> String {
    common::real_model(common::SMOLLM2);
    common::models_dir().parent().unwrap().display().to_string()
}

fn ask(threads: usize, tokens: usize) -> (f64, usize) {
    let out = Command::new(tui_support::tmux::binary())
        .env("TAPER_HOME", home())
        .envs(extra_env())
        .args([
            "ask",
            "-m",
            "SmolLM2-135M-Instruct.Q4_1",
            "--temperature",
            "0",
            "--stats",
        ])
        .args([
            "--threads",
            &threads.to_string(),
            "-n",
            &tokens.to_string(),
            PROMPT,
        ])
        .output()
        .expect("taper ask runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("decode"))
        .expect("a stats line");
    // "... | generated 256 tok | decode 54.1 tok/s | ..."
    let after = |name: &str| -> &str {
        let rest = line.split(name).nth(1).expect("the stats line names it");
        rest.split_whitespace().next().unwrap_or("")
    };
    (
        after("decode ").parse().expect("a decode rate"),
        after("generated ").parse().expect("a token count"),
    )
}

/// Runs one question in the TUI; returns the decode rate its stats panel shows when done,
/// and the CPU seconds of the UI thread and of the tmux server during the answer.
fn tui(threads: usize, tokens: usize) -> (f64, f64, f64) {
    let env: String = extra_env()
        .iter()
        .map(|(k, v)| format!("{k}={v} "))
        .collect();
    let extra = std::env::var("TAPER_SPEED_TUI_ARGS").unwrap_or_default();
    let args = format!(
        "chat -m SmolLM2-135M-Instruct.Q4_1 --temperature 0 --threads {threads} -n {tokens} {extra}"
    );
    let tmux = Tmux::start("speed", &shell_command(&home(), &env, &args), 120, 40);
    tmux.wait_text("phase    idle", Duration::from_secs(120));
    let pid = tmux.format("#{pane_pid}");
    let server = tmux.format("#{pid}");
    let ui_before = ui_thread_cpu(&pid);
    let server_before = process_cpu(&server);
    tmux.type_text(PROMPT);
    tmux.keys(&["Enter"]);
    let done = tmux.wait_for("the answer", Duration::from_secs(600), |s| {
        s.contains("SmolLM2-135M-Instruct.Q4_1 · ") && s.contains("phase    idle")
    });
    let ui_cpu = ui_thread_cpu(&pid) - ui_before;
    let server_cpu = process_cpu(&server) - server_before;
    tmux.keys(&["C-q"]);
    tmux.wait_text("EXITED", Duration::from_secs(30));
    (
        stat(&done, "decode").expect("a decode rate"),
        ui_cpu,
        server_cpu,
    )
}

/// CPU seconds of a whole process (the tmux server: the terminal's share of the work).
fn process_cpu(pid: &str) -> f64 {
    cpu_seconds(&format!("/proc/{pid}/stat"))
}

fn cpu_seconds(stat_file: &str) -> f64 {
    let stat = std::fs::read_to_string(stat_file).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// CPU seconds of the TUI's own thread (the process's main thread, where the tokio loop
/// runs), found as the child of the pane's shell.
fn ui_thread_cpu(shell_pid: &str) -> f64 {
    let children = std::fs::read_to_string(format!("/proc/{shell_pid}/task/{shell_pid}/children"))
        .unwrap_or_default();
    let Some(pid) = children.split_whitespace().next() else {
        return 0.0;
    };
    cpu_seconds(&format!("/proc/{pid}/task/{pid}/stat"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore = "a measurement: run on a quiet machine with --ignored --nocapture"]
fn tui_decode_rate_matches_taper_ask() {
    let threads = env_or("TAPER_SPEED_THREADS", 2);
    let runs = env_or("TAPER_SPEED_RUNS", 3);
    let tokens = env_or("TAPER_SPEED_TOKENS", 256);
    let (mut asks, mut tuis) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let (a, generated) = ask(threads, tokens);
        let (t, ui_cpu, server_cpu) = tui(threads, tokens);
        eprintln!(
            "run {run}: ask {a:.1} tok/s ({generated} tok) | tui {t:.1} tok/s, \
             CPU during the answer: UI thread {ui_cpu:.2} s, tmux {server_cpu:.2} s"
        );
        asks.push(a);
        tuis.push(t);
    }
    let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let (best_a, best_t) = (best(&asks), best(&tuis));
    let (a, t) = (median(asks), median(tuis));
    eprintln!(
        "{threads} threads, {runs} runs: median ask {a:.1}, tui {t:.1} tok/s ({:+.1}%); \
         best ask {best_a:.1}, tui {best_t:.1} tok/s ({:+.1}%)",
        (t / a - 1.0) * 100.0,
        (best_t / best_a - 1.0) * 100.0
    );
}
