//! Gemma 4's and FunctionGemma's argument syntax as Lark, from a tool's JSON Schema: bare
//! keys in sorted order (the template writes them `dictsort`ed), strings between a quote
//! marker, numbers, booleans, null, nested objects and arrays. Schemas it cannot follow
//! (`$ref`, `allOf`, patterns) allow any value of the syntax there.

use super::lark::{literal, regex_escape, Rules};
use serde_json::Value;

/// Gemma 4's string delimiter.
pub const GEMMA4_QUOTE: &str = "<|\"|>";
/// FunctionGemma's string delimiter.
pub const FUNCTION_GEMMA_QUOTE: &str = "<escape>";

/// The rule expression of an arguments object valid for `schema`.
pub fn object(rules: &mut Rules, quote: &str, schema: &Value) -> String {
    shared_rules(rules, quote);
    let writer = Writer { quote, rules };
    writer.object(schema)
}

/// Any value, and the terminals every expression uses.
fn shared_rules(rules: &mut Rules, quote: &str) {
    if rules.has("g_value") {
        return;
    }
    let q = literal(quote);
    let inner = regex_escape(quote);
    // Written as text, a string is one terminal, markers included (its text is anything
    // without the marker); a terminal cannot hold a special token, so a model whose quote is
    // one gets its own alternative.
    rules.add(
        "G_STRING",
        &format!("{q} (/(?s:.*)/ & ~/(?s:.*){inner}(?s:.*)/) {q}"),
    );
    match rules.special(quote) {
        Some(id) => {
            rules.add("G_TEXT", &format!("/(?s:.+)/ & ~/(?s:.*){inner}(?s:.*)/"));
            rules.add(
                "g_string",
                &format!("G_STRING | <[{id}]> <[{id}]> | <[{id}]> G_TEXT <[{id}]>"),
            );
        }
        None => rules.add("g_string", "G_STRING"),
    }
    rules.add("G_INT", r"/-?(0|[1-9][0-9]*)/");
    rules.add(
        "G_NUMBER",
        r"/-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/",
    );
    rules.add("G_KEY", r"/[A-Za-z_][A-Za-z0-9_]*/");
    rules.add(
        "g_value",
        r#"g_string | G_NUMBER | "true" | "false" | "null" | g_object | g_array"#,
    );
    rules.add(
        "g_object",
        r#""{" "}" | "{" G_KEY ":" g_value ("," G_KEY ":" g_value)* "}""#,
    );
    rules.add("g_array", r#""[" "]" | "[" g_value ("," g_value)* "]""#);
}

struct Writer<'a, 'r> {
    quote: &'a str,
    rules: &'a Rules<'r>,
}

impl Writer<'_, '_> {
    fn value(&self, schema: &Value) -> String {
        let Some(map) = schema.as_object() else {
            return "g_value".into();
        };
        if let Some(Value::Array(options)) = map.get("enum") {
            return self.choice(options.iter().map(|v| self.constant(v)).collect());
        }
        if let Some(constant) = map.get("const") {
            return self.constant(constant);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = map.get(key) {
                let options = options.iter().map(|o| self.value(o)).collect();
                return self.choice(options);
            }
        }
        match map.get("type") {
            Some(Value::String(kind)) => self.typed(kind, schema),
            Some(Value::Array(kinds)) => {
                let options = kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|kind| self.typed(kind, schema))
                    .collect();
                self.choice(options)
            }
            _ if map.contains_key("properties") => self.object(schema),
            _ => "g_value".into(),
        }
    }

    fn typed(&self, kind: &str, schema: &Value) -> String {
        match kind {
            "string" => "g_string".into(),
            "integer" => "G_INT".into(),
            "number" => "G_NUMBER".into(),
            "boolean" => r#"("true" | "false")"#.into(),
            "null" => r#""null""#.into(),
            "array" => {
                let item = schema
                    .get("items")
                    .map_or("g_value".into(), |s| self.value(s));
                format!(r#"("[" "]" | "[" {item} ("," {item})* "]")"#)
            }
            "object" => self.object(schema),
            _ => "g_value".into(),
        }
    }

    /// `{key:value,…}` with the schema's properties in sorted order, the required ones
    /// always and the others when the model likes; no properties given: any keys.
    fn object(&self, schema: &Value) -> String {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return "g_object".into();
        };
        if properties.is_empty() {
            return r#""{" "}""#.into();
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut keys: Vec<&String> = properties.keys().collect();
        keys.sort();
        let members: Vec<(String, bool)> = keys
            .iter()
            .map(|key| {
                let value = self.value(&properties[key.as_str()]);
                let member = format!("{} {value}", literal(&format!("{key}:")));
                (member, required.contains(&key.as_str()))
            })
            .collect();
        let inside = first(&members);
        if members.iter().any(|(_, required)| *required) {
            format!(r#""{{" {inside} "}}""#)
        } else {
            format!(r#""{{" ({inside})? "}}""#)
        }
    }

    /// A value written as it is in a call: strings between the quote markers.
    fn constant(&self, value: &Value) -> String {
        match value {
            Value::String(s) => self.rules.text(&format!("{}{s}{}", self.quote, self.quote)),
            Value::Array(_) | Value::Object(_) => "g_value".into(),
            other => literal(&other.to_string()),
        }
    }

    fn choice(&self, options: Vec<String>) -> String {
        if options.is_empty() {
            return "g_value".into();
        }
        format!("({})", options.join(" | "))
    }
}

/// The members from the first one written on: it is the first member, or (when optional)
/// absent and the list starts later. Needs at least one member.
fn first(members: &[(String, bool)]) -> String {
    let (member, required) = &members[0];
    let with = format!("{member} {}", rest(&members[1..]));
    if *required || members.len() == 1 {
        return with.trim_end().to_string();
    }
    format!("({} | {})", with.trim_end(), first(&members[1..]))
}

/// The members after one was written: each behind a comma, the optional ones optional.
fn rest(members: &[(String, bool)]) -> String {
    members
        .iter()
        .map(|(member, required)| {
            if *required {
                format!(r#""," {member}"#)
            } else {
                format!(r#"("," {member})?"#)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
