//! Each family's grammar against the byte-level test vocabulary: its own calls taken whole,
//! wrong names and argument types refused, and what it produces read back by `parse`.

use super::*;
use crate::engine::grammar::{Grammar, Grammars};
use crate::engine::tokenizer::tests::byte_level;
use crate::engine::tokenizer::TextTokenizer;
use crate::tools::parse::{parse, ParsedCall};
use serde_json::{json, Value};
use ToolFormat::*;

const GEMMA_QUOTE: &str = "<|\"|>";

fn tool(name: &str, parameters: Value) -> Tool {
    Tool {
        name: name.into(),
        description: None,
        parameters,
    }
}

fn weather_and_time(choice: ToolChoice, parallel: bool) -> ToolSet {
    ToolSet {
        tools: vec![
            tool(
                "get_weather",
                json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city"]
                }),
            ),
            tool(
                "get_time",
                json!({"type": "object", "properties": {"tz": {"type": "string"}}}),
            ),
        ],
        choice,
        parallel,
    }
}

struct Setup {
    tokenizer: TextTokenizer,
    grammars: Grammars,
}

fn setup() -> Setup {
    let tokenizer = byte_level();
    let grammars = Grammars::new(&tokenizer).expect("a byte-level vocabulary");
    Setup {
        tokenizer,
        grammars,
    }
}

impl Setup {
    fn start(&self, constraint: &Constraint) -> Grammar {
        self.grammars
            .start(constraint)
            .unwrap_or_else(|e| panic!("{e:#}\n{constraint:?}"))
    }

    /// Whether the grammar takes all of `text` (from the trigger on, for a triggered one),
    /// each token allowed by its mask, and is complete after it.
    fn accepts(&self, constraint: &Constraint, text: &str) -> bool {
        self.accepts_ids(constraint, &self.tokenizer.encode(text).unwrap())
    }

    /// [`Setup::accepts`] for tokens.
    fn accepts_ids(&self, constraint: &Constraint, ids: &[u32]) -> bool {
        let mut grammar = self.start(constraint);
        let mut logits = vec![0.0; self.tokenizer.vocab_size()];
        for &id in ids {
            logits.fill(0.0);
            grammar.mask(&mut logits).unwrap();
            if !logits[id as usize].is_finite() || grammar.accept(id).is_err() {
                return false;
            }
        }
        grammar.is_complete()
    }
}

fn calls(list: &[(&str, &str)]) -> Vec<ParsedCall> {
    list.iter()
        .map(|(name, arguments)| ParsedCall {
            name: name.to_string(),
            arguments: arguments.to_string(),
        })
        .collect()
}

/// Per family: a valid answer with two calls (one where the family takes one), what it
/// reads as, and answers with a wrong tool name and a wrong argument type.
struct Sample {
    format: ToolFormat,
    valid: &'static str,
    calls: &'static [(&'static str, &'static str)],
    wrong_name: &'static str,
    wrong_type: &'static str,
}

const SAMPLES: &[Sample] = &[
    Sample {
        format: Hermes,
        valid: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris \\\"Nord\\\"\", \"days\": 3}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
        calls: &[
            ("get_weather", r#"{"city": "Paris \"Nord\"", "days": 3}"#),
            ("get_time", "{}"),
        ],
        wrong_name: "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        wrong_type: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": \"3\"}}\n</tool_call>",
    },
    Sample {
        format: SmolLm3,
        valid: "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}</tool_call>",
        calls: &[
            ("get_weather", r#"{"city": "Paris"}"#),
            ("get_time", r#"{"tz": "UTC"}"#),
        ],
        wrong_name: "<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
        wrong_type: "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": 7}}</tool_call>",
    },
    Sample {
        format: Llama3,
        valid: "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}",
        calls: &[("get_weather", r#"{"city": "Paris", "days": 2}"#)],
        wrong_name: "{\"name\": \"get_weathers\", \"parameters\": {\"city\": \"Paris\"}}",
        wrong_type: "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2.5}}",
    },
    Sample {
        format: Phi4Mini,
        valid: "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}]<|/tool_call|>",
        calls: &[
            ("get_weather", r#"{"city": "Paris"}"#),
            ("get_time", r#"{"tz": "UTC"}"#),
        ],
        wrong_name: "<|tool_call|>[{\"name\": \"get_date\", \"arguments\": {}}]<|/tool_call|>",
        wrong_type: "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": true}}]<|/tool_call|>",
    },
    Sample {
        format: Gemma4,
        valid: "<|tool_call>call:get_weather{city:<|\"|>Paris \"Nord\"<|\"|>,days:3}<tool_call|><|tool_call>call:get_time{}<tool_call|>",
        calls: &[
            ("get_weather", r#"{"city":"Paris \"Nord\"","days":3}"#),
            ("get_time", "{}"),
        ],
        wrong_name: "<|tool_call>call:get_wether{city:<|\"|>Paris<|\"|>}<tool_call|>",
        wrong_type: "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:<|\"|>3<|\"|>}<tool_call|>",
    },
    Sample {
        format: FunctionGemma,
        valid: "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call><start_function_call>call:get_time{tz:<escape>UTC<escape>}<end_function_call>",
        calls: &[
            ("get_weather", r#"{"city":"Paris"}"#),
            ("get_time", r#"{"tz":"UTC"}"#),
        ],
        wrong_name: "<start_function_call>call:time{}<end_function_call>",
        wrong_type: "<start_function_call>call:get_weather{city:3}<end_function_call>",
    },
    Sample {
        format: Mistral,
        valid: "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {}}]",
        calls: &[("get_weather", r#"{"city": "Paris"}"#), ("get_time", "{}")],
        wrong_name: "[TOOL_CALLS][{\"name\": \"get_Weather\", \"arguments\": {\"city\": \"Paris\"}}]",
        wrong_type: "[TOOL_CALLS]get_weather[ARGS]{\"city\": [\"Paris\"]}",
    },
    Sample {
        format: Mistral,
        valid: "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": 1}[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{}",
        calls: &[
            ("get_weather", r#"{"city": "Paris", "days": 1}"#),
            ("get_time", "{}"),
        ],
        wrong_name: "[TOOL_CALLS]get_time_now[ARGS]{}",
        wrong_type: "[TOOL_CALLS]get_weather[ARGS]{\"days\": 1}",
    },
    Sample {
        format: Generic,
        valid: "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"K\u{f8}benhavn\"}}, {\"name\": \"get_time\", \"arguments\": {}}]}",
        calls: &[
            ("get_weather", "{\"city\": \"K\u{f8}benhavn\"}"),
            ("get_time", "{}"),
        ],
        wrong_name: "{\"tool_calls\": [{\"name\": \"get_weather2\", \"arguments\": {}}]}",
        wrong_type: "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": null}}]}",
    },
];

#[test]
fn each_family_takes_its_own_calls_and_reads_them_back() {
    let s = setup();
    for sample in SAMPLES {
        let constraint = constraint(sample.format, &weather_and_time(ToolChoice::Required, true))
            .expect("a constraint");
        assert!(
            s.accepts(&constraint, sample.valid),
            "{:?} refused {}\n{constraint:?}",
            sample.format,
            sample.valid
        );
        let parsed = parse(sample.format, sample.valid);
        assert_eq!(parsed.calls, calls(sample.calls), "{:?}", sample.format);
        assert_eq!(parsed.content, "");
    }
}

#[test]
fn a_wrong_tool_name_or_argument_type_is_refused() {
    let s = setup();
    for sample in SAMPLES {
        let constraint =
            constraint(sample.format, &weather_and_time(ToolChoice::Required, true)).unwrap();
        for wrong in [sample.wrong_name, sample.wrong_type] {
            assert!(
                !s.accepts(&constraint, wrong),
                "{:?} took {wrong}",
                sample.format
            );
        }
    }
}

#[test]
fn the_mask_holds_the_name_to_the_tools() {
    let s = setup();
    let constraint = constraint(Hermes, &weather_and_time(ToolChoice::Required, true)).unwrap();
    let mut grammar = s.start(&constraint);
    for id in s
        .tokenizer
        .encode("<tool_call>\n{\"name\": \"get_")
        .unwrap()
    {
        grammar.accept(id).unwrap();
    }
    let mut logits = vec![0.0; s.tokenizer.vocab_size()];
    grammar.mask(&mut logits).unwrap();
    let allowed: Vec<String> = (0..logits.len() as u32)
        .filter(|&id| logits[id as usize].is_finite())
        .map(|id| s.tokenizer.decode(&[id]).unwrap())
        .collect();
    assert_eq!(allowed, ["t", "w"]);
}

#[test]
fn one_call_unless_parallel_and_only_the_named_tool() {
    let s = setup();
    let two = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    let one = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    let single = constraint(Hermes, &weather_and_time(ToolChoice::Required, false)).unwrap();
    assert!(s.accepts(&single, one));
    assert!(!s.accepts(&single, two));
    let named = constraint(
        Hermes,
        &weather_and_time(ToolChoice::Named("get_time".into()), true),
    )
    .unwrap();
    assert!(s.accepts(&named, one));
    assert!(!s.accepts(&named, two));
    let other = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    assert!(!s.accepts(&named, other));
}

#[test]
fn the_generic_form_with_no_call_allowed_is_held_to_a_reply() {
    let s = setup();
    let none = weather_and_time(ToolChoice::None, true);
    let reply = constraint(Generic, &none).expect("a reply grammar");
    assert!(s.accepts(&reply, "{\"response\": \"It is sunny.\"}"));
    let call =
        "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]}";
    assert!(!s.accepts(&reply, call));
}

#[test]
fn no_constraint_without_tools_to_call() {
    let none = weather_and_time(ToolChoice::None, true);
    assert_eq!(constraint(Hermes, &none), None);
    let unknown = weather_and_time(ToolChoice::Named("nope".into()), true);
    assert_eq!(constraint(Hermes, &unknown), None);
    let empty = ToolSet {
        tools: Vec::new(),
        choice: ToolChoice::Required,
        parallel: true,
    };
    assert_eq!(constraint(Generic, &empty), None);
}

#[test]
fn auto_waits_for_the_family_marker_and_the_grammar_starts_with_it() {
    let s = setup();
    let expected = [
        (Hermes, "<tool_call>"),
        (SmolLm3, "<tool_call>"),
        (Llama3, "<|python_tag|>"),
        (Phi4Mini, "<|tool_call|>"),
        (Gemma4, "<|tool_call>"),
        (FunctionGemma, "<start_function_call>"),
        (Mistral, "[TOOL_CALLS]"),
    ];
    for (format, marker) in expected {
        let Some(Constraint::Triggered { trigger, lark }) =
            constraint(format, &weather_and_time(ToolChoice::Auto, true))
        else {
            panic!("{format:?}: not triggered");
        };
        assert_eq!(trigger, marker);
        let c = Constraint::Lark(lark);
        let sample = SAMPLES.iter().find(|x| x.format == format).unwrap();
        let valid = if format == Llama3 {
            format!("<|python_tag|>{}", sample.valid)
        } else {
            sample.valid.to_string()
        };
        assert!(s.accepts(&c, &valid), "{format:?}: {valid}");
        assert!(!s.accepts(&c, &format!("Sure. {valid}")), "{format:?}");
    }
}

#[test]
fn generic_auto_is_calls_or_a_response() {
    let s = setup();
    let c = constraint(Generic, &weather_and_time(ToolChoice::Auto, true)).unwrap();
    assert!(matches!(c, Constraint::Lark(_)));
    let response = "{\"response\": \"It is \\\"sunny\\\".\"}";
    assert!(s.accepts(&c, response));
    assert_eq!(parse(Generic, response).content, "It is \"sunny\".");
    assert!(s.accepts(&c, SAMPLES.last().unwrap().valid));
    assert!(!s.accepts(&c, "{\"answer\": \"x\"}"));
    let required = constraint(Generic, &weather_and_time(ToolChoice::Required, true)).unwrap();
    assert!(!s.accepts(&required, response));
}

/// A tiny deterministic random source for the walks.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

/// Text the grammar writes choosing its tokens at random (ending at random once complete).
fn walk(s: &Setup, constraint: &Constraint, rng: &mut Lcg) -> String {
    let mut grammar = s.start(constraint);
    let eos = s.tokenizer.stop_ids()[0];
    let mut ids = Vec::new();
    for _ in 0..3000 {
        let mut logits = vec![0.0; s.tokenizer.vocab_size()];
        grammar.mask(&mut logits).unwrap();
        let allowed: Vec<u32> = (0..logits.len() as u32)
            .filter(|&id| logits[id as usize].is_finite() && id != eos)
            .collect();
        if allowed.is_empty() || (grammar.is_complete() && rng.below(2) == 0) {
            break;
        }
        let id = allowed[rng.below(allowed.len())];
        grammar.accept(id).unwrap();
        ids.push(id);
    }
    assert!(grammar.is_complete(), "the walk ended early");
    s.tokenizer.decode(&ids).unwrap()
}

#[test]
fn what_each_grammar_writes_parses_back_to_valid_calls() {
    let s = setup();
    // Closed choices only, so that random walks end.
    let tools = ToolSet {
        tools: vec![
            tool(
                "set_mode",
                json!({
                    "type": "object",
                    "properties": {
                        "mode": {"enum": ["fast", "slow \"x\""]},
                        "level": {"type": "integer"},
                        "on": {"type": "boolean"},
                        "opts": {
                            "type": "object",
                            "properties": {"n": {"type": "integer"}},
                            "required": ["n"],
                            "additionalProperties": false
                        }
                    },
                    "required": ["mode", "level"],
                    "additionalProperties": false
                }),
            ),
            tool(
                "ping",
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
            ),
        ],
        choice: ToolChoice::Required,
        parallel: true,
    };
    let mut rng = Lcg(7);
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
        let c = constraint(format, &tools).unwrap();
        for _ in 0..8 {
            let text = walk(&s, &c, &mut rng);
            let parsed = parse(format, &text);
            assert_eq!(parsed.content, "", "{format:?}: {text}");
            assert!(!parsed.calls.is_empty(), "{format:?}: {text}");
            for call in parsed.calls {
                let args: Value = serde_json::from_str(&call.arguments).unwrap();
                match call.name.as_str() {
                    "ping" => assert_eq!(args, json!({}), "{text}"),
                    "set_mode" => {
                        assert!(
                            ["fast", "slow \"x\""].contains(&args["mode"].as_str().unwrap()),
                            "{text}"
                        );
                        assert!(args["level"].is_number(), "{text}");
                        assert!(args.get("on").is_none_or(Value::is_boolean), "{text}");
                        assert!(
                            args.get("opts").is_none_or(|o| o["n"].is_number()),
                            "{text}"
                        );
                    }
                    other => panic!("{format:?} called {other}: {text}"),
                }
            }
        }
    }
}

/// The test vocabulary's one special token that is not the end of a turn, standing in for a
/// model's marker token.
const MARKER_TOKEN: u32 = 261;

#[test]
fn a_marker_that_is_a_special_token_may_be_written_as_that_token_or_as_text() {
    let s = setup();
    let tools = weather_and_time(ToolChoice::Required, true);
    let special = |m: &str| (m == "<tool_call>").then_some(MARKER_TOKEN);
    let c = constraint_with(Hermes, &tools, &special).unwrap();
    let rest = "\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
    let mut ids = vec![MARKER_TOKEN];
    ids.extend(s.tokenizer.encode(rest).unwrap());
    assert!(s.accepts_ids(&c, &ids));
    assert!(s.accepts(&c, &format!("<tool_call>{rest}")));
}

#[test]
fn a_gemma_quote_that_is_a_special_token_delimits_strings() {
    let s = setup();
    let tools = weather_and_time(ToolChoice::Required, true);
    let special = |m: &str| (m == GEMMA_QUOTE).then_some(MARKER_TOKEN);
    let c = constraint_with(Gemma4, &tools, &special).unwrap();
    let encode = |t: &str| s.tokenizer.encode(t).unwrap();
    let mut ids = encode("<|tool_call>call:get_weather{city:");
    ids.push(MARKER_TOKEN);
    ids.extend(encode("Paris <b>"));
    ids.push(MARKER_TOKEN);
    ids.extend(encode(",days:2}<tool_call|>"));
    assert!(s.accepts_ids(&c, &ids));
    assert!(s.accepts(
        &c,
        "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
    ));
    // An integer is no string, in either form.
    let mut ids = encode("<|tool_call>call:get_weather{city:<|\"|>P<|\"|>,days:");
    ids.push(MARKER_TOKEN);
    assert!(!s.accepts_ids(&c, &ids));
}
