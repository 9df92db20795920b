//! `taper mcp list` and `taper mcp call` as the real binary, with `TAPER_HOME` a temporary
//! folder holding the config.

use crate::{py_server, python};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A config.toml whose `files`-like server is the Python test server.
fn py_table(name: &str, args: &str) -> String {
    let server = py_server(&[]);
    format!(
        "[mcp.servers.{name}]\ncommand = {:?}\nargs = [{:?}, {args}]\n",
        server.command.unwrap(),
        server.args[0]
    )
}

fn taper(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_taper"))
        .args(args)
        .env("TAPER_HOME", home)
        .stdin(Stdio::null())
        .output()
        .expect("run taper")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn mcp_list_shows_each_server_its_tools_and_a_failure_with_its_log_and_exits_zero() {
    let home = tempfile::tempdir().unwrap();
    let claude = home.path().join("claude_desktop_config.json");
    let py = python().display().to_string();
    let script = py_server(&[]).args[0].clone();
    let json = serde_json::json!({"mcpServers": {
        "imported": {"command": py, "args": [script, "version", "2024-11-05"], "env": {"SECRET_ENV": "hidden-value-42"}},
        "broken": {"command": py, "args": [script, "exit"]}
    }});
    std::fs::write(&claude, json.to_string()).unwrap();
    let config = format!(
        "[mcp]\nimport = [{:?}]\n{}",
        claude.display().to_string(),
        py_table("tools", "\"tools\"")
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let out = taper(home.path(), &["mcp", "list"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("imported  (stdio: ") && stdout.contains("ready, 2 tools"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  echo") && stdout.contains("Says the text back."),
        "{stdout}"
    );
    assert!(
        stdout.contains("  add ") && stdout.contains("Adds two integers."),
        "{stdout}"
    );
    assert!(
        stdout.contains("broken  (stdio: ") && stdout.contains("failed: `broken` exited"),
        "{stdout}"
    );
    assert!(
        stdout.contains("log: ") && stdout.contains("mcp-broken.log"),
        "{stdout}"
    );
    assert!(!stdout.contains("hidden-value-42") && !text(&out.stderr).contains("hidden-value-42"));
}

#[test]
fn mcp_call_prints_the_result_and_fails_with_the_message_on_an_error() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), py_table("py", "\"tools\"")).unwrap();
    let out = taper(
        home.path(),
        &["mcp", "call", "py", "add", r#"{"a": 20, "b": 22}"#],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "42\n");
    let failed = taper(home.path(), &["mcp", "call", "py", "fail"]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        text(&failed.stderr).contains("failed on purpose"),
        "{}",
        text(&failed.stderr)
    );
    let bad = taper(home.path(), &["mcp", "call", "py", "add", "{oops"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stderr).contains("not valid JSON"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn a_broken_config_makes_mcp_list_fail_with_a_sentence() {
    let home = tempfile::tempdir().unwrap();
    let both = "[mcp.servers.x]\ncommand = \"a\"\nurl = \"http://h/mcp\"\n";
    std::fs::write(home.path().join("config.toml"), both).unwrap();
    let out = taper(home.path(), &["mcp", "list"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("config.toml") && stderr.contains("both `command` and `url`"),
        "{stderr}"
    );
    let import = "[mcp]\nimport = [\"nothing-here.json\"]\n";
    std::fs::write(home.path().join("config.toml"), import).unwrap();
    let out = taper(home.path(), &["mcp", "list"]);
    assert!(!out.status.success() && text(&out.stderr).contains("nothing-here.json"));
}

/// The peak resident memory of a running process, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_100_mb_answer_does_not_blow_up_the_client_s_memory() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        py_table("big", "\"tools\""),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_taper"))
        .args(["mcp", "call", "big", "huge", r#"{"megabytes": 100}"#])
        .env("TAPER_HOME", home.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(peak_kib(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("more than 16 MiB"),
        "{}",
        text(&out.stderr)
    );
    // rmcp reads a line into a buffer of at most 16 MiB and drops the rest as it comes.
    eprintln!(
        "peak memory of `taper mcp call` for a 100 MB answer: {} MiB",
        peak / 1024
    );
    assert!(peak < 120 * 1024, "peak {peak} KiB");
}
