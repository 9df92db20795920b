//! Servers that misbehave: each gives one clear error, and the other servers go on.

use crate::{assert_error, call_done, event, pids_with, py_server, start, start_with};
use taper::mcp::{ServerConfig, ServerState, ToolEvent};

#[test]
fn a_server_crashing_mid_call_fails_that_call_and_the_others_go_on() {
    let (host, mut events) = start(vec![
        ("crasher", py_server(&["tools"])),
        ("steady", py_server(&["version", "2025-11-25"])),
    ]);
    let r = host.call_blocking("crasher", "crash", serde_json::json!({}));
    assert!(r.is_error, "{r:?}");
    assert!(
        r.text.contains("`crasher` exited") && r.text.contains("exit status: 3"),
        "{}",
        r.text
    );
    let message = event(&mut events, |e| match e {
        ToolEvent::ServerFailed { server, message } if server == "crasher" => Some(message),
        _ => None,
    });
    assert!(message.contains("mcp-crasher.log"), "{message}");
    let states: Vec<_> = host.servers().into_iter().map(|s| s.state).collect();
    assert!(matches!(&states[0], ServerState::Failed(_)), "{states:?}");
    assert_eq!(states[1], ServerState::Ready);
    // Its tools are no longer offered; calling one is an error result, not a hang.
    assert!(host.offered().iter().all(|t| t.server != "crasher"));
    let again = host.call_blocking("crasher", "echo", serde_json::json!({"text": "x"}));
    assert_error(&again, "not running");
    host.call("s", "echo", r#"{"text": "still here"}"#);
    assert_eq!(call_done(&mut events, "s").text, "still here");
    let log = std::fs::read_to_string(host.servers()[0].log.clone().unwrap()).unwrap();
    assert!(log.contains("crashing on purpose"), "{log}");
    host.shutdown();
}

#[test]
fn lines_on_stdout_that_are_not_messages_are_skipped_and_logged() {
    let (host, _events) = start(vec![("noisy", py_server(&["version", "2025-11-25"]))]);
    let r = host.call_blocking("noisy", "garbage", serde_json::json!({}));
    assert_eq!((r.text.as_str(), r.is_error), ("still fine", false));
    let log = std::fs::read_to_string(host.servers()[0].log.clone().unwrap()).unwrap();
    assert!(log.contains("not a message: this is not json"), "{log}");
    host.shutdown();
}

#[test]
fn an_answer_over_the_message_limit_fails_its_call_at_once_and_the_server_goes_on() {
    let (host, _events) = start(vec![("huge", py_server(&["tools"]))]);
    let r = host.call_blocking("huge", "huge", serde_json::json!({"megabytes": 100}));
    assert!(r.is_error, "{r:?}");
    assert_eq!(
        r.text,
        "`huge` answered `huge` with more than 16 MiB, which taper does not read"
    );
    let after = host.call_blocking("huge", "add", serde_json::json!({"a": 3, "b": 4}));
    assert_eq!(after.text, "7");
    host.shutdown();
}

#[test]
fn a_stderr_flood_neither_blocks_the_server_nor_grows_the_log_past_its_bound() {
    let (host, _events) = start(vec![("flood", py_server(&["tools"]))]);
    let r = host.call_blocking("flood", "flood", serde_json::json!({"megabytes": 8}));
    assert_eq!((r.text.as_str(), r.is_error), ("flooded", false));
    let log_path = host.servers()[0].log.clone().unwrap();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.len() <= 1024 * 1024 + 200, "{} bytes", log.len());
    assert!(
        log.trim_end()
            .ends_with("the server's further output is dropped]"),
        "{}",
        &log[log.len() - 200..]
    );
    host.shutdown();
}

#[test]
fn servers_that_cannot_start_fail_with_a_sentence_and_the_others_start() {
    let missing = ServerConfig {
        command: Some("/nonexistent/mcp-server".into()),
        ..ServerConfig::default()
    };
    let (host, _events) = start(vec![
        ("missing", missing),
        ("quitter", py_server(&["exit"])),
        ("fine", py_server(&["version", "2025-11-25"])),
    ]);
    let by_name = |n: &str| host.servers().into_iter().find(|s| s.name == n).unwrap();
    let ServerState::Failed(why) = by_name("missing").state else {
        panic!()
    };
    assert!(
        why.contains("cannot start `/nonexistent/mcp-server`"),
        "{why}"
    );
    let quitter = by_name("quitter");
    let ServerState::Failed(why) = &quitter.state else {
        panic!("{quitter:?}")
    };
    assert!(
        why.contains("exited before it was ready") && why.contains("3"),
        "{why}"
    );
    let log = std::fs::read_to_string(quitter.log.unwrap()).unwrap();
    assert!(log.contains("exiting at once on purpose"), "{log}");
    assert_eq!(by_name("fine").state, ServerState::Ready);
    host.shutdown();
}

#[test]
fn a_disabled_server_is_not_started_and_a_disabled_tool_is_not_offered() {
    let mut off = py_server(&["tools", "disabled-token-5c"]);
    off.enabled = Some(false);
    let mut partly = py_server(&["tools"]);
    partly.tools.insert(
        "crash".into(),
        taper::mcp::ToolConfig {
            enabled: Some(false),
            approve: None,
        },
    );
    partly.tools.insert(
        "fail".into(),
        taper::mcp::ToolConfig {
            enabled: None,
            approve: Some(taper::mcp::Approval::Never),
        },
    );
    let (host, mut events) = start_with(vec![("off", off), ("partly", partly)], |_| {});
    assert_eq!(host.servers()[0].state, ServerState::Disabled);
    assert!(pids_with("disabled-token-5c").is_empty());
    let offered = host.offered();
    assert!(!offered.iter().any(|t| t.name == "crash"));
    host.call("n", "fail", "{}");
    let refused = call_done(&mut events, "n");
    assert_error(&refused, "approve = \"never\"");
    host.shutdown();
}
