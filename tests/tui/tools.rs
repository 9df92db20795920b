//! MCP tools with the real model, as a person uses them: SmolLM2 in the chat (tmux) told to
//! call a tool of a real MCP server (written with the official Python `mcp` package), the
//! approval asked in the input box, `y` runs the call and `n` refuses it, the results shown,
//! the final answer streamed, and the saved session and its export holding the calls. And
//! `taper ask --tools`, the same loop without a screen.

use crate::tui_support::serial;
use crate::tui_support::tmux::{assert_terminal_restored, binary, shell_command, Tmux};
use crate::venv;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const LOAD: Duration = Duration::from_secs(180);
const ANSWER: Duration = Duration::from_secs(300);
const QUICK: Duration = Duration::from_secs(60);

/// A data directory with the test models and a config naming the `calc` server (one tool,
/// `add`); at most `rounds` rounds of calls per question.
fn home_with_calc(rounds: usize) -> tempfile::TempDir {
    let home = crate::e2e::fresh_home();
    let python = venv::venv_python("taper-test-mcp-venv", &["mcp==2.3.0"], "mcp");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/servers/pyserver.py");
    let config = format!(
        "[mcp]\nmax_rounds = {rounds}\n\n[mcp.servers.calc]\ncommand = {:?}\nargs = [{:?}, \"calc\"]\n",
        python.display().to_string(),
        script.display().to_string()
    );
    std::fs::write(home.path().join("config.toml"), config).expect("config.toml");
    home
}

fn ask(home: &tempfile::TempDir, extra: &[&str]) -> (String, String, bool) {
    ask_model(home, "SmolLM2-135M-Instruct.Q4_1", extra)
}

fn ask_model(home: &tempfile::TempDir, model: &str, extra: &[&str]) -> (String, String, bool) {
    let mut args = vec![
        "ask",
        "-m",
        model,
        "--temperature",
        "0",
        "--tools",
        "--tool-choice",
        "required",
        "--stats",
    ];
    args.extend_from_slice(extra);
    args.push("What is 2 plus 3?");
    let out = Command::new(binary())
        .args(&args)
        .env("TAPER_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .expect("run taper ask");
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (text(&out.stdout), text(&out.stderr), out.status.success())
}

/// The `(prompt, cached)` tokens of each round `ask --stats` reported.
fn rounds(stderr: &str) -> Vec<(usize, usize)> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("taper: round ")?;
            let (_, rest) = rest.split_once(": prompt ")?;
            let (prompt, rest) = rest.split_once(" tok (cached ")?;
            let (cached, _) = rest.split_once(')')?;
            Some((prompt.parse().ok()?, cached.parse().ok()?))
        })
        .collect()
}

#[test]
fn ask_with_tools_runs_the_calls_and_each_round_reads_only_what_is_new() {
    let _serial = serial();
    let home = home_with_calc(2);
    let (stdout, stderr, ok) = ask(&home, &["--yes"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("taper: calc wants to call add {\"a\": "),
        "{stderr}"
    );
    assert!(stderr.contains("taper: add returned in "), "{stderr}");
    assert!(!stdout.trim().is_empty(), "an answer on stdout: {stderr}");
    assert!(
        !stdout.contains("tool_calls"),
        "calls stay off stdout: {stdout}"
    );
    // Round 2 reuses everything round 1 read and wrote: only the results are new.
    let rounds = rounds(&stderr);
    assert_eq!(rounds.len(), 2, "{stderr}");
    assert!(rounds[1].1 > rounds[0].0, "{rounds:?}\n{stderr}");
    // The last answer (no call allowed) reuses the loop's cache too.
    let last = stderr.lines().last().unwrap_or("");
    let cached: usize = last
        .split("(cached ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|n| n.parse().ok())
        .expect("the --stats line");
    assert!(cached > rounds[1].0, "{last}");
}

#[test]
fn a_remote_model_calls_the_local_servers_tools_the_same_way() {
    let _serial = serial();
    // `taper serve` on SmolLM2 is the remote: the tools go to it as OpenAI `tools`, its
    // `tool_calls` come back and run here.
    let server = crate::serve_support::Server::start(&[]);
    let home = home_with_calc(1);
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).expect("config.toml");
    text.push_str(&format!(
        "\n[[remotes]]\nname = \"box\"\nurl = {:?}\n",
        server.url
    ));
    std::fs::write(&config, text).expect("config.toml");
    let (stdout, stderr, ok) = ask_model(&home, "box/SmolLM2-135M-Instruct.Q4_1", &["--yes"]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("taper: calc wants to call add {"),
        "{stderr}"
    );
    assert!(stderr.contains("taper: add returned in "), "{stderr}");
    assert!(
        stderr.contains("remote "),
        "the figures name the server: {stderr}"
    );
    assert!(!stdout.trim().is_empty(), "{stderr}");
}

#[test]
fn ask_without_yes_and_without_a_terminal_refuses_and_the_model_is_told() {
    let _serial = serial();
    let home = home_with_calc(1);
    let (_, stderr, ok) = ask(&home, &[]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("not run: no terminal"), "{stderr}");
    assert!(stderr.contains("add failed in "), "{stderr}");
    assert!(!stderr.contains("add returned"), "{stderr}");
}

#[test]
fn in_the_chat_a_call_is_approved_or_refused_and_the_session_keeps_the_loop() {
    let _serial = serial();
    let home = home_with_calc(2);
    let home_s = home.path().display().to_string();
    let args = "chat -m SmolLM2-135M-Instruct.Q4_1 --temperature 0 --max-tokens 120";
    let tmux = Tmux::start("tools", &shell_command(&home_s, "", args), 120, 40);
    tmux.wait_text("Loaded SmolLM2-135M-Instruct.Q4_1", LOAD);
    tmux.wait_text("MCP server calc is ready: 1 tool", QUICK);

    // Ctrl+S: the tool choice (the ninth field) set to required.
    tmux.keys(&["C-s"]);
    tmux.wait_text("Tool choice", QUICK);
    for _ in 0..8 {
        tmux.keys(&["Down"]);
    }
    tmux.keys(&["Enter", "C-u"]);
    tmux.type_text("required");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Tool choice      required", QUICK);
    tmux.keys(&["Escape"]);

    tmux.type_text("What is 2 plus 3?");
    tmux.keys(&["Enter"]);
    let asking = tmux.wait_text("run add? y once", ANSWER);
    assert!(
        asking.contains("⚙ add {\"a\": "),
        "the call is shown:\n{asking}"
    );
    assert!(asking.contains("calling tools"), "{asking}");

    // y runs the first call, n refuses the next one; every later one runs, until the model
    // answers in prose (the rounds are bounded by the config).
    let mut answers = ["y", "n"].into_iter();
    let done = loop {
        let screen = tmux.wait_for("an approval or the end of the loop", ANSWER, |s| {
            s.contains("run add? y once")
                || (s.contains("phase    idle") && !s.contains("writing…"))
        });
        if !screen.contains("run add? y once") {
            break screen;
        }
        let key = answers.next().unwrap_or("y");
        tmux.keys(&[key]);
        tmux.wait_for("the answer to the approval", QUICK, |s| {
            !s.contains("run add? y once") || s != screen
        });
    };
    eprintln!("after the loop:\n{done}");
    // The whole conversation, results unfolded.
    tmux.keys(&["C-k"]);
    let unfolded = tmux.wait_text("Ctrl+K folds", QUICK);
    assert!(unfolded.contains("↳ add"), "{unfolded}");

    tmux.keys(&["C-q"]);
    assert_terminal_restored(&tmux, "0");

    // The session holds the calls and both kinds of result; the export shows them.
    let sessions = home.path().join("sessions");
    let file = std::fs::read_dir(&sessions)
        .expect("a sessions directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .expect("a saved session");
    let session = taper::sessions::store::load(&file).expect("the session reads");
    let results: Vec<_> = session
        .messages
        .iter()
        .filter(|m| m.role == taper::chat::Role::Tool)
        .collect();
    assert!(
        results
            .iter()
            .any(|m| !m.is_error && m.content.trim().parse::<i64>().is_ok()),
        "a result of add: {results:?}"
    );
    assert!(
        results
            .iter()
            .any(|m| m.is_error && m.content.contains("refused")),
        "the refusal: {results:?}"
    );
    assert!(session.messages.iter().any(|m| !m.tool_calls.is_empty()));
    let export = Command::new(binary())
        .args(["export", &session.id])
        .env("TAPER_HOME", home.path())
        .output()
        .expect("taper export");
    let markdown = String::from_utf8_lossy(&export.stdout);
    assert!(markdown.contains("Calls `add`"), "{markdown}");
    assert!(markdown.contains("## Result of `add`"), "{markdown}");
    assert!(markdown.contains("The user refused"), "{markdown}");
}
