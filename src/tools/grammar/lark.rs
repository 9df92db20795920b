//! Writing llguidance Lark: string literals, a JSON Schema embedded as `%json`, and a grammar
//! built up rule by rule.

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
    let mut schema = match schema {
        Value::Object(_) => schema.clone(),
        _ => json!({"type": "object"}),
    };
    if let Some(object) = schema.as_object_mut() {
        object.entry("x-guidance").or_insert_with(|| {
            json!({
                "whitespace_flexible": false,
                "item_separator": ", ",
                "key_separator": ": ",
                "lenient": true,
            })
        });
    }
    format!("%json {schema}")
}

/// A grammar's rules, in the order added, each name once.
#[derive(Default)]
pub struct Rules {
    rules: Vec<(String, String)>,
}

impl Rules {
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
    pub fn text(&self) -> String {
        let mut out = String::new();
        let (start, rest): (Vec<_>, Vec<_>) = self.rules.iter().partition(|(n, _)| n == "start");
        for (name, body) in start.into_iter().chain(rest) {
            out.push_str(&format!("{name}: {body}\n"));
        }
        out
    }
}
