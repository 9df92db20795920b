//! Writing llguidance Lark: string literals, a JSON Schema embedded as `%json`, and a grammar
//! built up rule by rule.

use crate::protocol::Constraint;
use serde_json::{json, Value};

/// A Lark string literal matching `text` exactly (Lark strings are JSON strings).
pub fn literal(text: &str) -> String {
    // Serializing a string cannot fail.
    serde_json::to_string(text).unwrap_or_default()
}

/// A regular expression matching `text` exactly.
pub fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~/\"".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// JSON valid against `schema`, written compactly (`{"a": 1, "b": [2]}`, as templates write
/// arguments) unless the schema says otherwise; keywords llguidance does not know are
/// ignored rather than failing the request (`lenient`).
pub fn json(schema: &Value) -> String {
    let schema = match schema {
        Value::Object(_) => Constraint::compact(schema.clone(), true),
        _ => Constraint::compact(json!({"type": "object"}), true),
    };
    format!("%json {schema}")
}

/// Every family's markers: the strings a model's vocabulary may hold as one special token.
const MARKERS: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<|python_tag|>",
    "<|tool_call|>",
    "<|/tool_call|>",
    "<|tool_call>",
    "<tool_call|>",
    "<|\"|>",
    "<start_function_call>",
    "<end_function_call>",
    "<escape>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
];

/// The id of the special token a marker is in a model's vocabulary, if it is one.
pub type Special<'a> = &'a dyn Fn(&str) -> Option<u32>;

/// A grammar's rules, in the order added, each name once; and the model's special tokens,
/// which a grammar must name (a literal only matches text, and a model writes its markers
/// as their special tokens).
pub struct Rules<'a> {
    rules: Vec<(String, String)>,
    special: Special<'a>,
}

impl<'a> Rules<'a> {
    pub fn new(special: Special<'a>) -> Self {
        Self {
            rules: Vec::new(),
            special,
        }
    }

    /// The special token `marker` is, if it is one.
    pub fn special(&self, marker: &str) -> Option<u32> {
        (self.special)(marker)
    }

    /// Lark matching `text`, where each marker that is a special token may also be that
    /// token (as text it still matches: a triggered grammar reads its trigger as text).
    pub fn text(&self, text: &str) -> String {
        let found = MARKERS
            .iter()
            .filter_map(|m| Some((text.find(m)?, m, self.special(m)?)))
            .min_by_key(|(at, m, _)| (*at, usize::MAX - m.len()));
        let Some((at, marker, id)) = found else {
            return literal(text);
        };
        let mut parts = Vec::new();
        if at > 0 {
            parts.push(literal(&text[..at]));
        }
        parts.push(format!("({} | <[{id}]>)", literal(marker)));
        let rest = &text[at + marker.len()..];
        if !rest.is_empty() {
            parts.push(self.text(rest));
        }
        parts.join(" ")
    }

    /// Adds `name: body` unless a rule of that name is there already (shared rules are
    /// added by whoever needs them first).
    pub fn add(&mut self, name: &str, body: &str) {
        if !self.has(name) {
            self.rules.push((name.to_string(), body.to_string()));
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.rules.iter().any(|(n, _)| n == name)
    }

    /// The grammar's text, `start` first.
    pub fn grammar(&self) -> String {
        let mut out = String::new();
        let (start, rest): (Vec<_>, Vec<_>) = self.rules.iter().partition(|(n, _)| n == "start");
        for (name, body) in start.into_iter().chain(rest) {
            out.push_str(&format!("{name}: {body}\n"));
        }
        out
    }
}
