//! The client against servers written with the official Python `mcp` package: listing (every
//! page), calls, results made text, list_changed, ping, cancellation, protocol versions.

use crate::{
    assert_error, call_done, event, gone, pids_with, py_server, start, start_with, PATIENCE,
};
use std::time::{Duration, Instant};
use taper::mcp::{Approval, ServerState, ToolEvent};

#[test]
fn a_ready_server_offers_its_tools_and_answers_calls() {
    let (host, mut events) = start(vec![("py", py_server(&["tools"]))]);
    let status = &host.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    assert!(
        status.transport.starts_with("stdio: "),
        "{}",
        status.transport
    );
    let offered = host.offered();
    let add = offered
        .iter()
        .find(|t| t.name == "add")
        .expect("add offered");
    assert_eq!((add.server.as_str(), add.approval), ("py", Approval::Ask));
    assert_eq!(
        add.spec.parameters["required"],
        serde_json::json!(["a", "b"])
    );
    assert_eq!(add.spec.description.as_deref(), Some("Adds two integers."));

    host.call("c1", "add", r#"{"a": 2, "b": 40}"#);
    let sum = call_done(&mut events, "c1");
    assert!(!sum.is_error, "{sum:?}");
    assert_eq!(sum.text, "42");
    let echoed = host.call_blocking("py", "echo", serde_json::json!({"text": "héllo"}));
    assert_eq!((echoed.text.as_str(), echoed.is_error), ("héllo", false));
    host.shutdown();
}

#[test]
fn bad_arguments_and_unknown_tools_are_error_results_without_a_call() {
    let (host, mut events) = start(vec![("pyargs", py_server(&["tools"]))]);
    host.call("bad", "echo", "{not json");
    let bad = call_done(&mut events, "bad");
    assert_error(&bad, "not valid JSON");
    host.call("list", "echo", "[1, 2]");
    assert!(call_done(&mut events, "list").text.contains("JSON object"));
    host.call("nope", "no_such_tool", "{}");
    assert!(call_done(&mut events, "nope")
        .text
        .contains("no tool named `no_such_tool`"));
    let unknown = host.call_blocking("pyargs", "no_such_tool", serde_json::json!({}));
    assert_error(&unknown, "has no tool");
    let no_server = host.call_blocking("elsewhere", "echo", serde_json::json!({}));
    assert!(
        no_server.text.contains("no MCP server named `elsewhere`"),
        "{no_server:?}"
    );
    // Wrong argument types reach the server, whose refusal is the error result.
    host.call("types", "add", r#"{"a": "two", "b": 1}"#);
    assert!(call_done(&mut events, "types").is_error);
    host.shutdown();
}

#[test]
fn tools_list_is_followed_through_every_page() {
    let (host, _events) = start(vec![("many", py_server(&["many", "250"]))]);
    let tools = &host.servers()[0].tools;
    assert_eq!(tools.len(), 250, "{:?}", host.servers()[0].state);
    assert_eq!(
        (tools[0].name.as_str(), tools[249].name.as_str()),
        ("tool_000", "tool_249")
    );
    let called = host.call_blocking("many", "tool_123", serde_json::json!({}));
    assert_eq!(called.text, "tool_123 called");
    host.shutdown();
}

#[test]
fn two_servers_sharing_a_tool_name_offer_it_under_each_server_name() {
    let (host, mut events) = start(vec![
        ("alpha", py_server(&["tools"])),
        ("beta", py_server(&["version", "2025-06-18"])),
    ]);
    let names: Vec<String> = host.offered().into_iter().map(|t| t.name).collect();
    assert!(
        names.contains(&"alpha_echo".into()) && names.contains(&"beta_echo".into()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"echo".into()) && names.contains(&"add".into()),
        "{names:?}"
    );
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    host.call("b", "beta_echo", r#"{"text": "from beta"}"#);
    assert_eq!(call_done(&mut events, "b").text, "from beta");
    host.shutdown();
}

#[test]
fn a_changed_tool_list_is_listed_again_and_reported() {
    let (host, mut events) = start(vec![("grower", py_server(&["tools"]))]);
    assert!(!host.offered().iter().any(|t| t.name == "late_tool"));
    host.call("g", "grow", r#"{"name": "late_tool"}"#);
    assert!(!call_done(&mut events, "g").is_error);
    let changed = event(&mut events, |e| match e {
        ToolEvent::ToolsChanged { server } => Some(server),
        _ => None,
    });
    assert_eq!(changed, "grower");
    assert!(
        host.offered().iter().any(|t| t.name == "late_tool"),
        "{:?}",
        host.offered()
    );
    host.call("late", "late_tool", r#"{"text": "new"}"#);
    assert_eq!(call_done(&mut events, "late").text, "new");
    host.shutdown();
}

#[test]
fn the_client_answers_the_server_s_ping() {
    let (host, _events) = start(vec![("pinger", py_server(&["tools"]))]);
    let r = host.call_blocking("pinger", "ping_client", serde_json::json!({}));
    assert_eq!(
        (r.text.as_str(), r.is_error),
        ("the client answered ping", false)
    );
    host.shutdown();
}

#[test]
fn results_become_text_errors_images_and_cut_text() {
    let (host, _events) = start_with(vec![("shapes", py_server(&["tools"]))], |c| {
        c.max_result_chars = Some(100)
    });
    let failed = host.call_blocking("shapes", "fail", serde_json::json!({}));
    assert_error(&failed, "failed on purpose");
    let image = host.call_blocking("shapes", "image", serde_json::json!({}));
    assert_eq!(
        image.text,
        "[image image/png, 12 KB: not shown to the model]"
    );
    let long = host.call_blocking("shapes", "huge", serde_json::json!({"megabytes": 1}));
    assert_eq!(long.text, "x".repeat(100));
    assert_eq!(
        long.note.as_deref(),
        Some("cut: 1048576 characters, the first 100 kept")
    );
    host.shutdown();
}

#[test]
fn a_cancelled_call_reaches_the_server_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("cancelled");
    let mut server = py_server(&["tools", "cancel-token-7a1"]);
    server.env.insert(
        "TAPER_MCP_MARK".into(),
        taper::remote::Secret::new(mark.display().to_string()),
    );
    let (host, mut events) = start(vec![("sleeper", server)]);
    let pids = pids_with("cancel-token-7a1");
    assert_eq!(pids.len(), 1, "{pids:?}");
    host.call("h", "hang", "{}");
    std::thread::sleep(Duration::from_millis(300));
    host.cancel("h");
    let r = call_done(&mut events, "h");
    assert_error(&r, "cancelled");
    assert_server_saw_the_cancel(&mark);
    // The server goes on after a cancel.
    assert_eq!(
        host.call_blocking("sleeper", "add", serde_json::json!({"a": 1, "b": 1}))
            .text,
        "2"
    );
    host.shutdown();
    assert!(pids.iter().all(|&p| gone(p)), "server process left running");
}

#[test]
fn a_call_past_its_time_limit_is_cancelled_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("cancelled");
    let mut server = py_server(&["tools"]);
    server.timeout_s = Some(1);
    server.env.insert(
        "TAPER_MCP_MARK".into(),
        taper::remote::Secret::new(mark.display().to_string()),
    );
    let (host, _events) = start(vec![("slow", server)]);
    let r = host.call_blocking("slow", "hang", serde_json::json!({}));
    assert!(r.is_error, "{r:?}");
    assert_eq!(
        r.text,
        "`hang` on `slow` took longer than 1 s and was cancelled"
    );
    assert_server_saw_the_cancel(&mark);
    host.shutdown();
}

#[test]
fn protocol_versions_from_2024_11_05_to_2025_11_25_are_accepted_and_others_refused() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let (host, _events) = start(vec![("versioned", py_server(&["version", version]))]);
        let r = host.call_blocking("versioned", "echo", serde_json::json!({"text": version}));
        assert_eq!(
            (r.text.as_str(), r.is_error),
            (version, false),
            "{:?}",
            host.servers()
        );
        host.shutdown();
    }
    let (host, mut events) = start(vec![("future", py_server(&["version", "2099-01-01"]))]);
    let ServerState::Failed(why) = &host.servers()[0].state else {
        panic!("{:?}", host.servers());
    };
    assert!(
        why.contains("MCP version 2099-01-01") && why.contains("2024-11-05"),
        "{why}"
    );
    let failed = event(&mut events, |e| match e {
        ToolEvent::ServerFailed { server, .. } => Some(server),
        _ => None,
    });
    assert_eq!(failed, "future");
    host.shutdown();
}

/// Waits for the mark the test server writes when one of its calls is cancelled.
fn assert_server_saw_the_cancel(mark: &std::path::Path) {
    let deadline = Instant::now() + PATIENCE;
    while !mark.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        mark.exists(),
        "the server never saw notifications/cancelled"
    );
}
