//! The constraint that makes an answer's tool calls valid by construction: in the model's own
//! syntax, each call naming one of the request's tools, its arguments valid for that tool's
//! schema. Written in llguidance's Lark syntax, arguments as `%json { schema }` (Gemma's own
//! argument syntax is spelled out from the schema in [`gemma`]).
//!
//! Each family is one [`Layout`]: the text around the list of calls, between calls, and
//! around each call's arguments. To add a family, add its layout and its trigger.

mod gemma;
mod lark;
#[cfg(test)]
mod tests;

use super::ToolFormat;
use crate::protocol::{Constraint, Tool, ToolChoice, ToolSet};

/// The constraint for an answer to a request with `tools`; None when the answer is free
/// (`tool_choice` none, no tools, or a named tool the request does not have, which the
/// caller refuses).
///
/// `auto` lets the model answer in prose: the grammar waits for the family's opening marker
/// ([`Constraint::Triggered`]), or, for [`ToolFormat::Generic`], the answer is the JSON
/// object with either calls or a response.
pub fn constraint(format: ToolFormat, tools: &ToolSet) -> Option<Constraint> {
    constraint_with(format, tools, &|_| None)
}

/// [`constraint`] for a model whose vocabulary holds markers as special tokens: `special`
/// gives the id of the one a marker (`<|tool_call>`, `[ARGS]`, …) is, and the grammar then
/// allows that token where the marker goes (besides the marker's text), so the model writes
/// it as it was taught.
pub fn constraint_with(
    format: ToolFormat,
    tools: &ToolSet,
    special: &dyn Fn(&str) -> Option<u32>,
) -> Option<Constraint> {
    let callable: Vec<&Tool> = match &tools.choice {
        // The generic form's instructions ask for JSON either way: `none` holds the answer to
        // a response, so it is prose (and reads as prose).
        ToolChoice::None if format == ToolFormat::Generic => {
            return Some(Constraint::Lark(generic_response(special)))
        }
        ToolChoice::None => return None,
        ToolChoice::Named(name) => tools.tools.iter().filter(|t| &t.name == name).collect(),
        ToolChoice::Auto | ToolChoice::Required => tools.tools.iter().collect(),
    };
    if callable.is_empty() {
        return None;
    }
    // A named tool is called once; Llama 3's templates take one call per answer.
    let parallel = tools.parallel
        && !matches!(tools.choice, ToolChoice::Named(_))
        && format != ToolFormat::Llama3;
    let auto = tools.choice == ToolChoice::Auto;
    if format == ToolFormat::Generic {
        return Some(Constraint::Lark(generic(
            &callable, parallel, auto, special,
        )));
    }
    let lark = calls_grammar(format, &callable, parallel, auto, special);
    Some(match trigger(format) {
        Some(trigger) if auto => Constraint::Triggered {
            trigger: trigger.to_string(),
            lark,
        },
        _ => Constraint::Lark(lark),
    })
}

/// The marker that starts a family's calls, where an `auto` grammar takes over. A Llama 3
/// call written as bare JSON (without `<|python_tag|>`) is still read by
/// [`super::parse`] but not held to its grammar: prose may start with `{` too.
fn trigger(format: ToolFormat) -> Option<&'static str> {
    match format {
        ToolFormat::Hermes | ToolFormat::SmolLm3 => Some("<tool_call>"),
        ToolFormat::Phi4Mini => Some("<|tool_call|>"),
        ToolFormat::Gemma4 => Some("<|tool_call>"),
        ToolFormat::FunctionGemma => Some("<start_function_call>"),
        ToolFormat::Mistral => Some("[TOOL_CALLS]"),
        ToolFormat::Llama3 => Some("<|python_tag|>"),
        ToolFormat::Generic => None,
    }
}

/// How a family writes its list of calls, as its chat template renders earlier ones.
struct Layout {
    /// Before the first call.
    open: &'static str,
    /// After the last call.
    close: &'static str,
    /// Between two calls.
    separator: &'static str,
    /// Around one call's arguments, given the tool's name.
    call: fn(&str) -> (String, String),
    /// Lark between the text before the arguments and the arguments (Mistral's id).
    before_arguments: Option<fn(&lark::Rules) -> String>,
    /// The arguments in Gemma's own syntax rather than JSON, strings between this marker.
    gemma_quote: Option<&'static str>,
}

/// A call as a JSON object, `{"name": "f", "arguments": {…}}`, with this arguments key.
fn json_call(name: &str, key: &str) -> (String, String) {
    let name = serde_json::to_string(name).unwrap_or_default();
    (format!("{{\"name\": {name}, \"{key}\": "), "}".into())
}

/// A layout with JSON arguments.
fn plain(
    open: &'static str,
    close: &'static str,
    separator: &'static str,
    call: fn(&str) -> (String, String),
) -> Layout {
    Layout {
        open,
        close,
        separator,
        call,
        before_arguments: None,
        gemma_quote: None,
    }
}

fn layouts(format: ToolFormat, auto: bool) -> Vec<Layout> {
    match format {
        ToolFormat::Hermes => vec![plain("", "", "\n", |name| {
            let (before, after) = json_call(name, "arguments");
            (
                format!("<tool_call>\n{before}"),
                format!("{after}\n</tool_call>"),
            )
        })],
        ToolFormat::SmolLm3 => vec![plain("", "", "\n", |name| {
            let (before, after) = json_call(name, "arguments");
            (
                format!("<tool_call>{before}"),
                format!("{after}</tool_call>"),
            )
        })],
        ToolFormat::Llama3 => vec![plain(
            if auto { "<|python_tag|>" } else { "" },
            "",
            "; ",
            |name| json_call(name, "parameters"),
        )],
        ToolFormat::Phi4Mini => vec![plain("<|tool_call|>[", "]<|/tool_call|>", ", ", |name| {
            json_call(name, "arguments")
        })],
        ToolFormat::Gemma4 => vec![Layout {
            gemma_quote: Some(gemma::GEMMA4_QUOTE),
            ..plain("", "", "", |name| {
                (format!("<|tool_call>call:{name}"), "<tool_call|>".into())
            })
        }],
        ToolFormat::FunctionGemma => vec![Layout {
            gemma_quote: Some(gemma::FUNCTION_GEMMA_QUOTE),
            ..plain("", "", "", |name| {
                (
                    format!("<start_function_call>call:{name}"),
                    "<end_function_call>".into(),
                )
            })
        }],
        // Older templates write one JSON array, newer ones `NAME[ARGS]{…}` per call: either.
        ToolFormat::Mistral => vec![
            plain("[TOOL_CALLS][", "]", ", ", |name| {
                json_call(name, "arguments")
            }),
            // Mistral Small 3.2 writes an id before the arguments.
            Layout {
                before_arguments: Some(|rules| {
                    let (id, args) = (rules.text("[CALL_ID]"), rules.text("[ARGS]"));
                    format!("({id} /[A-Za-z0-9]{{9}}/)? {args}")
                }),
                ..plain("", "", "", |name| {
                    (format!("[TOOL_CALLS]{name}"), String::new())
                })
            },
        ],
        ToolFormat::Generic => vec![plain("{\"tool_calls\": [", "]}", ", ", |name| {
            json_call(name, "arguments")
        })],
    }
}

/// The grammar of an answer that is nothing but calls in `format`'s syntax.
fn calls_grammar(
    format: ToolFormat,
    tools: &[&Tool],
    parallel: bool,
    auto: bool,
    special: lark::Special,
) -> String {
    let mut rules = lark::Rules::new(special);
    let forms: Vec<String> = layouts(format, auto)
        .iter()
        .enumerate()
        .map(|(i, layout)| calls_rule(&mut rules, &format!("form{i}"), layout, tools, parallel))
        .collect();
    rules.add("start", &forms.join(" | "));
    rules.grammar()
}

/// Adds the rules of one layout's list of calls, named `name`; returns its name.
fn calls_rule(
    rules: &mut lark::Rules,
    name: &str,
    layout: &Layout,
    tools: &[&Tool],
    parallel: bool,
) -> String {
    let calls: Vec<String> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let (before, after) = (layout.call)(&tool.name);
            let arguments = match layout.gemma_quote {
                Some(quote) => gemma::object(rules, quote, &tool.parameters),
                None => lark::json(&tool.parameters),
            };
            let rule = format!("{name}_call{i}");
            let mut body = vec![rules.text(&before)];
            if let Some(between) = layout.before_arguments {
                body.push(between(rules));
            }
            body.push(arguments);
            if !after.is_empty() {
                body.push(rules.text(&after));
            }
            rules.add(&rule, &body.join(" "));
            rule
        })
        .collect();
    let call = format!("{name}_call");
    rules.add(&call, &calls.join(" | "));
    let mut body = Vec::new();
    if !layout.open.is_empty() {
        body.push(rules.text(layout.open));
    }
    body.push(call.clone());
    if parallel {
        let separator = if layout.separator.is_empty() {
            String::new()
        } else {
            format!("{} ", rules.text(layout.separator))
        };
        body.push(format!("({separator}{call})*"));
    }
    if !layout.close.is_empty() {
        body.push(rules.text(layout.close));
    }
    rules.add(name, &body.join(" "));
    name.to_string()
}

/// The generic form: one JSON object with the calls, or (in `auto`) with a response.
fn generic(tools: &[&Tool], parallel: bool, auto: bool, special: lark::Special) -> String {
    let mut rules = lark::Rules::new(special);
    let layout = layouts(ToolFormat::Generic, auto).remove(0);
    let calls = calls_rule(&mut rules, "calls", &layout, tools, parallel);
    let start = if auto {
        format!("{calls} | {}", response_rule())
    } else {
        calls
    };
    rules.add("start", &start);
    rules.grammar()
}

/// The generic form's reply in prose: `{"response": "…"}`.
fn response_rule() -> String {
    let response = lark::json(&serde_json::json!({"type": "string"}));
    format!(
        "{} {response} {}",
        lark::literal("{\"response\": "),
        lark::literal("}")
    )
}

/// The generic form when no call is allowed: a reply only.
fn generic_response(special: lark::Special) -> String {
    let mut rules = lark::Rules::new(special);
    rules.add("start", &response_rule());
    rules.grammar()
}
