use super::*;

pub(crate) fn sample() -> Session {
    let sampling = SavedSampling::new(&SamplingParams::default(), 512);
    let mut s = Session::new("20261130-124817-00ab", 1_764_506_897, "Be brief.", sampling);
    s.messages.push(SavedMessage::plain(
        Role::User,
        "What is 2+2?",
        1_764_506_900,
    ));
    let usage = Usage {
        prompt_tokens: 20,
        generated_tokens: 5,
        ttft_s: 0.1,
        decode_s: 0.08,
        stop: Some(StopReason::EndOfTurn),
        ..Usage::default()
    };
    s.messages.push(SavedMessage {
        model: Some("SmolLM2".into()),
        status: Some(SavedStatus::Done),
        usage: Some((&usage).into()),
        ..SavedMessage::plain(Role::Assistant, "It is 4.", 1_764_506_901)
    });
    s
}

/// A tool loop: a call, its result, the answer.
pub(crate) fn with_tools() -> Session {
    let mut s = sample();
    s.messages[1].content = String::new();
    s.messages[1].tool_calls = vec![crate::chat::ToolCall {
        id: "call_1".into(),
        name: "add".into(),
        arguments: r#"{"a": 2, "b": 2}"#.into(),
    }];
    s.messages.push(SavedMessage {
        tool_call_id: Some("call_1".into()),
        tool_name: Some("add".into()),
        ..SavedMessage::plain(Role::Tool, "4", 1_764_506_902)
    });
    s.messages.push(SavedMessage {
        model: Some("SmolLM2".into()),
        status: Some(SavedStatus::Done),
        ..SavedMessage::plain(Role::Assistant, "It is 4.", 1_764_506_903)
    });
    s
}

#[test]
fn tool_calls_and_results_survive_a_round_trip() {
    let s = with_tools();
    let back = parse_session(&s.to_bytes()).unwrap();
    assert_eq!(back, s);
    assert_eq!(back.messages[1].tool_calls[0].name, "add");
    assert_eq!(back.messages[2].tool_call_id.as_deref(), Some("call_1"));
}

#[test]
fn a_tool_result_must_answer_an_earlier_call() {
    let mut s = with_tools();
    s.messages[2].tool_call_id = Some("call_9".into());
    assert!(matches!(
        parse_session(&s.to_bytes()),
        Err(SessionError::Corrupted(m)) if m.contains("message 2")
    ));
}

#[test]
fn a_version_1_file_still_reads() {
    let text = String::from_utf8(sample().to_bytes())
        .unwrap()
        .replace("\"version\": 2", "\"version\": 1");
    assert_eq!(parse_session(text.as_bytes()).unwrap().version, 1);
}

#[test]
fn a_session_survives_a_round_trip() {
    let s = sample();
    let back = parse_session(&s.to_bytes()).unwrap();
    assert_eq!(back, s);
    let usage = back.messages[1].usage.as_ref().unwrap();
    assert_eq!(usage.decode_tok_s, 50.0);
    assert_eq!(Usage::from(usage).generated_tokens, 5);
}

#[test]
fn a_newer_version_is_refused_by_number() {
    let text = String::from_utf8(sample().to_bytes())
        .unwrap()
        .replace("\"version\": 2", "\"version\": 7");
    assert_eq!(parse_session(text.as_bytes()), Err(SessionError::TooNew(7)));
}

#[test]
fn odd_versions_are_unknown() {
    for v in ["0", "\"1\"", "-1", "1.5", "null"] {
        let text = String::from_utf8(sample().to_bytes())
            .unwrap()
            .replace("\"version\": 2", &format!("\"version\": {v}"));
        assert!(
            matches!(
                parse_session(text.as_bytes()),
                Err(SessionError::UnknownVersion(_))
            ),
            "{v}"
        );
    }
}

#[test]
fn corrupted_and_foreign_files_are_told_apart() {
    let bytes = sample().to_bytes();
    assert!(matches!(
        parse_session(&bytes[..bytes.len() / 2]),
        Err(SessionError::NotJson(_))
    ));
    assert_eq!(parse_session(b"[1,2]"), Err(SessionError::NotASession));
    assert_eq!(
        parse_session(b"{\"format\":\"other\",\"version\":1}"),
        Err(SessionError::NotASession)
    );
    let missing = b"{\"format\":\"taper-session\",\"version\":1,\"id\":\"x\"}";
    assert!(matches!(
        parse_session(missing),
        Err(SessionError::Corrupted(_))
    ));
    let bad_id = String::from_utf8(bytes.clone())
        .unwrap()
        .replace("20261130-124817-00ab", "../../etc/passwd");
    assert!(matches!(
        parse_session(bad_id.as_bytes()),
        Err(SessionError::Corrupted(_))
    ));
}

#[test]
fn hostile_input_is_an_error_not_a_panic() {
    let deep = "[".repeat(100_000);
    assert!(parse_session(deep.as_bytes()).is_err());
    assert!(parse_session(&[0xff, 0xfe, 0x00]).is_err());
    assert!(parse_session(b"").is_err());
    let big = vec![b' '; MAX_SESSION_BYTES as usize + 1];
    assert_eq!(
        parse_session(&big),
        Err(SessionError::TooLarge(MAX_SESSION_BYTES + 1))
    );
    // Every prefix of a valid file: never a panic.
    let bytes = sample().to_bytes();
    for end in 0..bytes.len() {
        let _ = parse_session(&bytes[..end]);
    }
}

#[test]
fn titles_come_from_the_first_question() {
    let mut s = sample();
    assert_eq!(s.display_title(), "What is 2+2?");
    s.title = "Sums".into();
    assert_eq!(s.display_title(), "Sums");
    assert_eq!(title_from(&"x".repeat(70)).chars().count(), 61);
}
