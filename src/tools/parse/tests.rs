//! Each family's syntax as its models write it (from their chat templates and llama.cpp's
//! tests), read whole and streamed in every split.

use super::*;
use ToolFormat::*;

/// An answer and what it reads as: its prose and its calls (name, arguments).
struct Case {
    format: ToolFormat,
    text: &'static str,
    content: &'static str,
    calls: &'static [(&'static str, &'static str)],
}

const fn case(
    format: ToolFormat,
    text: &'static str,
    content: &'static str,
    calls: &'static [(&'static str, &'static str)],
) -> Case {
    Case {
        format,
        text,
        content,
        calls,
    }
}

const CASES: &[Case] = &[
    // Hermes 2/3, Qwen 2.5/3.
    case(
        Hermes,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "",
        &[("get_weather", r#"{"city": "Paris"}"#)],
    ),
    case(
        Hermes,
        "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
        "",
        &[("a", r#"{"x": 1}"#), ("b", "{}")],
    ),
    case(
        Hermes,
        "Let me look that up.\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"caf\u{e9} \\\"noir\\\" \u{1f600}\"}}\n</tool_call>",
        "Let me look that up.",
        &[("search", "{\"q\": \"caf\u{e9} \\\"noir\\\" \u{1f600}\"}")],
    ),
    case(
        Hermes,
        "Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call> Done.",
        "Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call> Done.",
        &[],
    ),
    case(
        Hermes,
        "<tool_call>\n{\"arguments\": {\"x\": 1}}\n</tool_call>",
        "<tool_call>\n{\"arguments\": {\"x\": 1}}\n</tool_call>",
        &[],
    ),
    case(
        Hermes,
        "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 2}\"}\n</tool_call>",
        "",
        &[("f", r#"{"x": 2}"#)],
    ),
    case(
        Hermes,
        "Use <tools> and a < b, then\n<tool_call>\n{\"name\": \"f\"}",
        "Use <tools> and a < b, then",
        &[("f", "{}")],
    ),
    case(Hermes, "No calls here.\n", "No calls here.\n", &[]),
    case(
        Hermes,
        "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
        "",
        &[("a", "{}"), ("b", "{}")],
    ),
    // SmolLM3: no new lines inside the markers.
    case(
        SmolLm3,
        "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}</tool_call>",
        "",
        &[("get_time", r#"{"tz": "UTC"}"#)],
    ),
    case(
        SmolLm3,
        "Checking.<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", \"arguments\": {\"n\": [1, 2]}}</tool_call>",
        "Checking.",
        &[("a", "{}"), ("b", r#"{"n": [1, 2]}"#)],
    ),
    case(
        SmolLm3,
        "<tool_call>{name: a}</tool_call>",
        "<tool_call>{name: a}</tool_call>",
        &[],
    ),
    // Llama 3.1-3.3.
    case(
        Llama3,
        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
        "",
        &[("get_weather", r#"{"city": "Oslo"}"#)],
    ),
    case(
        Llama3,
        "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": \"\u{65e5}\u{672c}\"}}; {\"name\": \"b\", \"arguments\": {}}",
        "",
        &[("a", "{\"x\": \"\u{65e5}\u{672c}\"}"), ("b", "{}")],
    ),
    case(
        Llama3,
        "{\"name\": \"a\", \"parameters\": {}}\n{\"name\": \"b\", \"parameters\": {\"q\": \"say \\\"hi\\\"\"}}",
        "",
        &[("a", "{}"), ("b", r#"{"q": "say \"hi\""}"#)],
    ),
    case(
        Llama3,
        "I'll check.<|python_tag|>{\"name\": \"f\", \"parameters\": {\"n\": 3}}",
        "I'll check.",
        &[("f", r#"{"n": 3}"#)],
    ),
    case(
        Llama3,
        "{\"answer\": 42}",
        "{\"answer\": 42}",
        &[],
    ),
    case(
        Llama3,
        "<|python_tag|>print(1 {)",
        "<|python_tag|>print(1 {)",
        &[],
    ),
    case(
        Llama3,
        "The JSON {\"name\": \"f\"} is an example.",
        "The JSON {\"name\": \"f\"} is an example.",
        &[],
    ),
    // Phi-4-mini.
    case(
        Phi4Mini,
        "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]<|/tool_call|>",
        "",
        &[("get_weather", r#"{"city": "Rome"}"#)],
    ),
    case(
        Phi4Mini,
        "Two calls:<|tool_call|>[{\"name\": \"a\", \"arguments\": {\"s\": \"\\u00e9\"}}, {\"name\": \"b\", \"arguments\": {}}]<|/tool_call|>",
        "Two calls:",
        &[("a", r#"{"s": "\u00e9"}"#), ("b", "{}")],
    ),
    case(
        Phi4Mini,
        "<|tool_call|>[{\"name\": \"a\"}, {\"nom\": \"b\"}]<|/tool_call|>",
        "<|tool_call|>[{\"name\": \"a\"}, {\"nom\": \"b\"}]<|/tool_call|>",
        &[],
    ),
    // Gemma 4.
    case(
        Gemma4,
        "<|tool_call>call:get_time{city:<|\"|>London<|\"|>}<tool_call|>",
        "",
        &[("get_time", r#"{"city":"London"}"#)],
    ),
    case(
        Gemma4,
        "Hello, world!\nWhat's up?<|tool_call>call:get_time{city:<|\"|>Paris<|\"|>}<tool_call|><|tool_call>call:set_config{config:{theme:<|\"|>dark \"x\"<|\"|>,count:3},todos:[<|\"|>buy milk<|\"|>],on:true,orig:1.5e10}<tool_call|>",
        "Hello, world!\nWhat's up?",
        &[
            ("get_time", r#"{"city":"Paris"}"#),
            (
                "set_config",
                r#"{"config":{"theme":"dark \"x\"","count":3},"todos":["buy milk"],"on":true,"orig":1.5e10}"#,
            ),
        ],
    ),
    case(
        Gemma4,
        "<|tool_call>call:empty_args{}<tool_call|>",
        "",
        &[("empty_args", "{}")],
    ),
    case(
        Gemma4,
        "<|tool_call>call:f{city:London}<tool_call|>",
        "<|tool_call>call:f{city:London}<tool_call|>",
        &[],
    ),
    // FunctionGemma.
    case(
        FunctionGemma,
        "<start_function_call>call:get_current_temperature{location:<escape>London<escape>}<end_function_call>",
        "",
        &[("get_current_temperature", r#"{"location":"London"}"#)],
    ),
    case(
        FunctionGemma,
        "On it.<start_function_call>call:a{n:-2,s:<escape>\u{fc}ber \"q\"<escape>}<end_function_call><start_function_call>call:b{}<end_function_call>",
        "On it.",
        &[("a", r#"{"n":-2,"s":"über \"q\""}"#), ("b", "{}")],
    ),
    case(
        FunctionGemma,
        "<start_function_call>call:a{n:<escape>open}<end_function_call>",
        "<start_function_call>call:a{n:<escape>open}<end_function_call>",
        &[],
    ),
    // Mistral: the JSON array, then the newer `NAME[ARGS]{…}`.
    case(
        Mistral,
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Nice\"}, \"id\": \"abc123def\"}]",
        "",
        &[("get_weather", r#"{"city": "Nice"}"#)],
    ),
    case(
        Mistral,
        "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"t\": \"[TOOL_CALLS]\"}}, {\"name\": \"b\", \"arguments\": {}}]",
        "",
        &[("a", r#"{"t": "[TOOL_CALLS]"}"#), ("b", "{}")],
    ),
    case(
        Mistral,
        "Let me see.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Lyon \\\"centre\\\"\"}[TOOL_CALLS]get_time[ARGS]{}",
        "Let me see.",
        &[
            ("get_weather", r#"{"city": "Lyon \"centre\""}"#),
            ("get_time", "{}"),
        ],
    ),
    case(
        Mistral,
        "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {]",
        "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {]",
        &[],
    ),
    case(
        Mistral,
        "[TOOL_CALLS]special_function[CALL_ID]000000001[ARGS]{\"arg1\": 1}[TOOL_CALLS]other[CALL_ID]000000002[ARGS]{}",
        "",
        &[("special_function", r#"{"arg1": 1}"#), ("other", "{}")],
    ),
    case(
        Mistral,
        "[TOOL_CALLS]get weather[ARGS]{}",
        "[TOOL_CALLS]get weather[ARGS]{}",
        &[],
    ),
    // Generic.
    case(
        Generic,
        "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bern\"}}]}",
        "",
        &[("get_weather", r#"{"city": "Bern"}"#)],
    ),
    case(
        Generic,
        "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {\"x\": \"\u{e9}\\n\"}}, {\"name\": \"b\", \"arguments\": {}}]}",
        "",
        &[("a", "{\"x\": \"\u{e9}\\n\"}"), ("b", "{}")],
    ),
    case(
        Generic,
        "{\"response\": \"Hello, \\\"world\\\" \u{1f30d}\\nBye\"}",
        "Hello, \"world\" \u{1f30d}\nBye",
        &[],
    ),
    case(
        Generic,
        "Just prose, {not json}.",
        "Just prose, {not json}.",
        &[],
    ),
    case(
        Generic,
        "{\"tool_calls\": [{\"arguments\": {}}]}",
        "{\"tool_calls\": [{\"arguments\": {}}]}",
        &[],
    ),
    case(Generic, "{\"response\": \"hi\"} and more", "hi", &[]),
    case(
        Generic,
        " { \"response\" :\"\\ud83d\\ude00 \\u00e9\\t\\/ \\ud800!\"}",
        "\u{1f600} \u{e9}\t/ \u{fffd}!",
        &[],
    ),
    case(
        Generic,
        "{\"response\": \"Cut short \\u00",
        "Cut short ",
        &[],
    ),
    case(
        Generic,
        "{\"response\": \"bad \\q escape\"}",
        "bad ",
        &[],
    ),
    case(
        Generic,
        "{\"responses\": \"x\"}",
        "{\"responses\": \"x\"}",
        &[],
    ),
];

fn expected(case: &Case) -> Parsed {
    Parsed {
        content: case.content.to_string(),
        calls: case
            .calls
            .iter()
            .map(|(name, arguments)| ParsedCall {
                name: name.to_string(),
                arguments: arguments.to_string(),
            })
            .collect(),
    }
}

#[test]
fn every_family_reads_its_calls_prose_and_broken_calls() {
    for case in CASES {
        assert_eq!(
            parse(case.format, case.text),
            expected(case),
            "{:?}: {}",
            case.format,
            case.text
        );
    }
}

#[test]
fn every_family_has_single_parallel_and_broken_cases() {
    for format in [
        Hermes,
        SmolLm3,
        Llama3,
        Phi4Mini,
        Gemma4,
        FunctionGemma,
        Mistral,
        Generic,
    ] {
        let cases: Vec<&Case> = CASES.iter().filter(|c| c.format == format).collect();
        assert!(cases.iter().any(|c| c.calls.len() == 1), "{format:?}");
        assert!(cases.iter().any(|c| c.calls.len() > 1), "{format:?}");
        assert!(cases.iter().any(|c| c.calls.is_empty()), "{format:?}");
    }
}

/// What a stream of `pieces` sent, put together as [`parse`] reads it; checks on the way that
/// each call starts before its arguments.
fn streamed(format: ToolFormat, pieces: &[&str]) -> Parsed {
    streamed_by(CallStream::new(format), pieces)
}

fn streamed_by(mut stream: CallStream, pieces: &[&str]) -> Parsed {
    let mut deltas = Vec::new();
    for piece in pieces {
        deltas.extend(stream.push(piece));
    }
    deltas.extend(stream.finish());
    let mut parsed = Parsed::default();
    for delta in deltas {
        match delta {
            StreamDelta::Content(text) => parsed.content.push_str(&text),
            StreamDelta::CallStart { index, name } => {
                assert_eq!(index, parsed.calls.len(), "calls start in order");
                parsed.calls.push(ParsedCall {
                    name,
                    arguments: String::new(),
                });
            }
            StreamDelta::Arguments { index, text } => {
                parsed.calls[index].arguments.push_str(&text);
            }
        }
    }
    parsed
}

#[test]
fn a_stream_sends_what_parse_reads_however_the_answer_is_split() {
    for case in CASES {
        let whole = parse(case.format, case.text);
        let chars: Vec<String> = case.text.chars().map(String::from).collect();
        let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(
            streamed(case.format, &chars),
            whole,
            "char by char: {}",
            case.text
        );
        for (at, _) in case.text.char_indices() {
            let (a, b) = case.text.split_at(at);
            assert_eq!(
                streamed(case.format, &[a, b]),
                whole,
                "split at {at}: {}",
                case.text
            );
        }
    }
}

/// The cases whose calls are all well formed, as a grammar writes them.
fn held_cases() -> impl Iterator<Item = &'static Case> {
    CASES.iter().filter(|case| {
        !case.calls.is_empty()
            && !parse(case.format, case.text)
                .content
                .contains(case.text.trim())
    })
}

#[test]
fn a_stream_sending_calls_ahead_adds_up_to_what_parse_reads() {
    for case in held_cases() {
        let whole = parse(case.format, case.text);
        let chars: Vec<String> = case.text.chars().map(String::from).collect();
        let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(
            streamed_by(CallStream::ahead(case.format), &chars),
            whole,
            "char by char: {}",
            case.text
        );
    }
}

#[test]
fn held_calls_stream_their_arguments_in_pieces_as_they_are_written() {
    let mut stream = CallStream::ahead(Hermes);
    assert_eq!(stream.push("<tool_call>\n{\"name\": \"f\", \"argu"), vec![]);
    assert_eq!(
        stream.push("ments\": {\"city\": \"Pa"),
        vec![
            StreamDelta::CallStart {
                index: 0,
                name: "f".into()
            },
            StreamDelta::Arguments {
                index: 0,
                text: "{\"city\": \"Pa".into()
            },
        ]
    );
    assert_eq!(
        stream.push("ris\"}}\n</tool_call>"),
        vec![StreamDelta::Arguments {
            index: 0,
            text: "ris\"}".into()
        }]
    );
    assert_eq!(stream.finish(), vec![]);
    // Every JSON family sends a call's arguments in more than one piece, char by char.
    for format in [Hermes, SmolLm3, Llama3, Phi4Mini, Mistral, Generic] {
        let case = held_cases()
            .find(|c| c.format == format && c.calls.iter().any(|(_, a)| a.len() > 4))
            .unwrap_or_else(|| panic!("{format:?} has a case with arguments"));
        let mut stream = CallStream::ahead(format);
        let mut pieces = 0;
        for c in case.text.chars() {
            let deltas = stream.push(&c.to_string());
            pieces += deltas
                .iter()
                .filter(|d| matches!(d, StreamDelta::Arguments { index: 0, .. }))
                .count();
        }
        assert!(
            pieces > 1,
            "{format:?}: {pieces} piece(s) for {}",
            case.text
        );
    }
}

#[test]
fn prose_streams_at_once_but_a_possible_marker_waits() {
    let mut stream = CallStream::new(Hermes);
    assert_eq!(
        stream.push("Hello <tool"),
        vec![StreamDelta::Content("Hello".into())]
    );
    assert_eq!(
        stream.push("box> ok"),
        vec![StreamDelta::Content(" <toolbox> ok".into())]
    );
    assert_eq!(stream.push("\n<tool_call>\n{\"name\": \"f\", "), vec![]);
    assert_eq!(
        stream.push("\"arguments\": {}}\n</tool_call>"),
        vec![
            StreamDelta::CallStart {
                index: 0,
                name: "f".into()
            },
            StreamDelta::Arguments {
                index: 0,
                text: "{}".into()
            },
        ]
    );
    assert_eq!(stream.finish(), vec![]);
}

#[test]
fn a_generic_response_streams_as_it_comes() {
    let mut stream = CallStream::new(Generic);
    assert_eq!(stream.push("{\"response\": "), vec![]);
    assert_eq!(
        stream.push("\"It is \\u00"),
        vec![StreamDelta::Content("It is".into())]
    );
    assert_eq!(
        stream.push("e9t\u{e9}.\"}"),
        vec![StreamDelta::Content(" \u{e9}t\u{e9}.".into())]
    );
    assert_eq!(stream.finish(), vec![]);
}
