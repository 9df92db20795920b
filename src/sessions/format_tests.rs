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
        .replace("\"version\": 3", "\"version\": 1");
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
        .replace("\"version\": 3", "\"version\": 7");
    assert_eq!(parse_session(text.as_bytes()), Err(SessionError::TooNew(7)));
}

#[test]
fn odd_versions_are_unknown() {
    for v in ["0", "\"1\"", "-1", "1.5", "null"] {
        let text = String::from_utf8(sample().to_bytes())
            .unwrap()
            .replace("\"version\": 3", &format!("\"version\": {v}"));
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

/// q1 → a1, and q1 → a1' (a regenerated sibling) → q2 → a2, shown on the second branch.
pub(crate) fn with_branches() -> Session {
    let mut s = sample();
    let a1 = s.messages[1].clone();
    s.messages[0].id = Some(1);
    s.messages[1].id = Some(2);
    s.messages[1].parent = Some(1);
    let with = |id, parent, m: SavedMessage| SavedMessage {
        id: Some(id),
        parent: Some(parent),
        ..m
    };
    s.messages.push(with(
        5,
        1,
        SavedMessage {
            content: "Four.".into(),
            ..a1.clone()
        },
    ));
    s.messages.push(with(
        6,
        5,
        SavedMessage::plain(Role::User, "And 3+3?", 1_764_506_910),
    ));
    s.messages.push(with(
        7,
        6,
        SavedMessage {
            content: "Six.".into(),
            ..a1
        },
    ));
    s.current = Some(7);
    s
}

#[test]
fn every_older_version_reads_as_one_path() {
    let v1 = include_bytes!("../../tests/fixtures/session-versions/v1.json");
    let v2 = include_bytes!("../../tests/fixtures/session-versions/v2.json");
    for (version, bytes) in [(1, &v1[..]), (2, &v2[..])] {
        let s = parse_session(bytes).unwrap();
        assert_eq!(s.version, version);
        let (parents, current) = s.tree().unwrap();
        let n = s.messages.len();
        assert_eq!(
            parents,
            (0..n).map(|i| i.checked_sub(1)).collect::<Vec<_>>()
        );
        assert_eq!(current, Some(n - 1));
        let path: Vec<&SavedMessage> = s.path();
        assert_eq!(path.len(), n, "version {version}");
        assert!(path
            .iter()
            .zip(&s.messages)
            .all(|(a, b)| std::ptr::eq(*a, b)));
    }
}

#[test]
fn a_tree_survives_a_round_trip_and_its_path_follows_current() {
    let s = with_branches();
    let back = parse_session(&s.to_bytes()).unwrap();
    assert_eq!(back, s);
    let path: Vec<&str> = back.path().iter().map(|m| m.content.as_str()).collect();
    assert_eq!(path, ["What is 2+2?", "Four.", "And 3+3?", "Six."]);
    let mut other = back.clone();
    other.current = Some(2);
    let path: Vec<&str> = other.path().iter().map(|m| m.content.as_str()).collect();
    assert_eq!(path, ["What is 2+2?", "It is 4."]);
}

#[test]
fn ids_that_do_not_make_a_tree_are_refused() {
    type Breaker = fn(&mut Session);
    let cases: [(&str, Breaker); 5] = [
        ("parent", |s| s.messages[2].parent = Some(99)),
        ("parent", |s| s.messages[2].parent = Some(6)),
        ("id", |s| s.messages[3].id = Some(1)),
        ("current", |s| s.current = Some(42)),
        ("some messages", |s| s.messages[4].id = None),
    ];
    for (word, break_it) in cases {
        let mut s = with_branches();
        break_it(&mut s);
        match parse_session(&s.to_bytes()) {
            Err(SessionError::Corrupted(why)) => assert!(why.contains(word), "{why}"),
            other => panic!("{word}: {other:?}"),
        }
    }
}

#[test]
fn a_tool_result_answers_the_answer_on_its_own_branch() {
    // The call is on a sibling branch, not before the result on its own: refused.
    let mut s = with_tools();
    for (i, m) in s.messages.iter_mut().enumerate() {
        m.id = Some(i as u64 + 1);
        m.parent = (i > 0).then_some(i as u64);
    }
    assert!(parse_session(&s.to_bytes()).is_ok());
    let mut sibling = SavedMessage {
        id: Some(10),
        parent: Some(1),
        ..s.messages[1].clone()
    };
    sibling.tool_calls.clear();
    s.messages.push(sibling);
    s.messages.push(SavedMessage {
        id: Some(11),
        parent: Some(10),
        ..s.messages[2].clone()
    });
    assert!(matches!(
        parse_session(&s.to_bytes()),
        Err(SessionError::Corrupted(m)) if m.contains("message 5")
    ));
}

#[test]
fn each_answer_keeps_its_own_settings() {
    let mut s = sample();
    let mut own = s.sampling.clone();
    own.temperature = 0.2;
    s.messages[1].sampling = Some(own.clone());
    s.messages[1].system_prompt = Some("Be verbose.".into());
    let back = parse_session(&s.to_bytes()).unwrap();
    assert_eq!(back.messages[1].sampling, Some(own));
    assert_eq!(
        back.messages[1].system_prompt.as_deref(),
        Some("Be verbose.")
    );
}
