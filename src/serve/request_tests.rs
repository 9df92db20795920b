use super::*;

const LIMITS: Limits = Limits {
    max_body_bytes: 1 << 20,
    max_messages: 8,
    max_tokens: 512,
};

fn chat(body: &str) -> Result<Completion, ApiError> {
    parse(body.as_bytes(), true, &SamplingParams::default(), &LIMITS)
}

fn param(body: &str) -> Option<String> {
    chat(body).expect_err("should be refused").param
}

#[test]
fn a_full_chat_request_reads_every_known_field() {
    let c = chat(
        r#"{"model":"x","messages":[{"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"hi"}]}],
            "temperature":0,"top_p":0.5,"top_k":3,"min_p":0.1,"seed":7,
            "max_completion_tokens":9000,"stop":"END","stream":true,
            "stream_options":{"include_usage":true},"presence_penalty":0.5,
            "unknown_field":{"anything":1}}"#,
    )
    .expect("valid");
    assert_eq!(
        c.prompt,
        Prompt::Chat(vec![Message::system("be brief"), Message::user("hi")])
    );
    assert_eq!(c.sampling.temperature, 0.0);
    assert_eq!((c.sampling.top_k, c.sampling.seed), (3, Some(7)));
    assert_eq!(c.max_tokens, Some(512), "capped");
    assert_eq!(c.stop, vec!["END".to_string()]);
    assert!(c.stream && c.include_usage);
    assert_eq!(c.presence_penalty, 0.5);
}

#[test]
fn wrong_types_and_ranges_name_the_field() {
    let m = r#""messages":[{"role":"user","content":"hi"}]"#;
    assert_eq!(
        param(&format!(r#"{{{m},"temperature":"hot"}}"#)).as_deref(),
        Some("temperature")
    );
    assert_eq!(
        param(&format!(r#"{{{m},"temperature":9}}"#)).as_deref(),
        Some("temperature")
    );
    assert_eq!(
        param(&format!(r#"{{{m},"max_tokens":1.5}}"#)).as_deref(),
        Some("max_tokens")
    );
    // The element, not only the array.
    assert_eq!(
        param(&format!(r#"{{{m},"stop":[1]}}"#)).as_deref(),
        Some("stop[0]")
    );
    assert_eq!(
        param(&format!(r#"{{{m},"stream":"yes"}}"#)).as_deref(),
        Some("stream")
    );
    assert_eq!(param(&format!(r#"{{{m},"n":2}}"#)).as_deref(), Some("n"));
    assert_eq!(
        param(r#"{"messages":[{"role":"robot","content":"x"}]}"#).as_deref(),
        Some("messages[0].role")
    );
    // A tool result must answer a call made before it.
    assert_eq!(
        param(r#"{"messages":[{"role":"tool","content":"x"}]}"#).as_deref(),
        Some("messages[0].tool_call_id")
    );
    assert_eq!(
        param(r#"{"messages":[{"role":"user","content":5}]}"#).as_deref(),
        Some("messages[0].content")
    );
    assert_eq!(param(r#"{"messages":[]}"#).as_deref(), Some("messages"));
    assert_eq!(param(r#"{"messages":"hi"}"#).as_deref(), Some("messages"));
}

#[test]
fn too_many_messages_and_bad_json_are_refused() {
    let many = [r#"{"role":"user","content":"x"}"#; 9].join(",");
    let err = chat(&format!(r#"{{"messages":[{many}]}}"#)).unwrap_err();
    assert!(err.message.contains("at most 8"), "{}", err.message);
    assert!(chat("{not json")
        .unwrap_err()
        .message
        .contains("not valid JSON"));
    assert!(chat("[1]").unwrap_err().message.contains("JSON object"));
}

#[test]
fn completions_take_a_prompt_string() {
    let c = parse(
        br#"{"prompt":"Once"}"#,
        false,
        &SamplingParams::default(),
        &LIMITS,
    )
    .unwrap();
    assert_eq!(c.prompt, Prompt::Raw("Once".into()));
    let e = parse(
        br#"{"prompt":3}"#,
        false,
        &SamplingParams::default(),
        &LIMITS,
    )
    .unwrap_err();
    assert_eq!(e.param.as_deref(), Some("prompt"));
}

#[test]
fn errors_name_the_path_and_the_problem() {
    let err = chat(
        r#"{"messages":[{"role":"user","content":"hi"},
            {"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}]}"#,
    )
    .unwrap_err();
    assert_eq!(err.param.as_deref(), Some("messages[1].content[1].type"));
    assert!(
        err.message
            .starts_with("`messages[1].content[1].type`: unknown variant `image_url`"),
        "{}",
        err.message
    );
    let err = chat(r#"{"messages":[{"role":"user","content":"hi"}],"top_p":"most"}"#).unwrap_err();
    assert!(
        err.message.contains("`top_p`") && err.message.contains("invalid type: string"),
        "{}",
        err.message
    );
    let err = chat(r#"{"messages":[{"content":"hi"}]}"#).unwrap_err();
    assert_eq!(err.param.as_deref(), Some("messages[0]"));
    assert!(
        err.message.contains("missing field `role`"),
        "{}",
        err.message
    );
}

#[test]
fn whole_numbers_stops_and_prompts_keep_their_rules() {
    let m = r#""messages":[{"role":"developer","content":null},{"role":"user","content":"hi"}]"#;
    let c = chat(&format!(
        r#"{{{m},"max_tokens":20.0,"n":1,"seed":-1,"stop":["","a"]}}"#
    ))
    .expect("valid");
    assert_eq!(
        c.prompt,
        Prompt::Chat(vec![Message::system(""), Message::user("hi")])
    );
    assert_eq!((c.max_tokens, c.sampling.seed), (Some(20), None));
    assert_eq!(c.stop, vec!["a".to_string()]);
    let err = chat(&format!(r#"{{{m},"stop":["a","b","c","d","e"]}}"#)).unwrap_err();
    assert!(err.message.contains("at most 4"), "{}", err.message);
    let long = "x".repeat(MAX_STOP_BYTES + 1);
    let err = chat(&format!(r#"{{{m},"stop":"{long}"}}"#)).unwrap_err();
    assert_eq!(err.param.as_deref(), Some("stop"));
    let err = chat(&format!(r#"{{{m},"top_k":-1}}"#)).unwrap_err();
    assert!(err.message.contains("between 0 and"), "{}", err.message);
    let raw = |body: &str| parse(body.as_bytes(), false, &SamplingParams::default(), &LIMITS);
    assert_eq!(
        raw(r#"{"prompt":["Once"]}"#).unwrap().prompt,
        Prompt::Raw("Once".into())
    );
    let err = raw(r#"{"prompt":["a","b"]}"#).unwrap_err();
    assert!(err.message.contains("one string only"), "{}", err.message);
    assert_eq!(raw(r#"{}"#).unwrap_err().param.as_deref(), Some("prompt"));
}

/// Text parts are joined by a newline, as llama-server and vLLM join them for templates.
#[test]
fn text_parts_are_joined_by_newlines() {
    let c = chat(
        r#"{"messages":[{"role":"user","content":[{"type":"text","text":"First part."},
            {"type":"text","text":"Second part."}]}]}"#,
    )
    .expect("valid");
    assert_eq!(
        c.prompt,
        Prompt::Chat(vec![Message::user("First part.\nSecond part.")])
    );
}
