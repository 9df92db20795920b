//! Reading calls written as JSON: where a value ends in text that may still be arriving, the
//! members of an object and the items of an array as the model wrote them, and one call
//! object (`{"name": …, "arguments": {…}}`) with its arguments' own text kept, and such
//! calls while they are still being written.

use super::ParsedCall;
use serde::de::IgnoredAny;
use serde_json::Value;

/// How much of a text a JSON value at its start takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// The value ends at this byte offset.
    Complete(usize),
    /// The text is a valid start of a value that has not ended yet.
    Incomplete,
    /// No continuation of the text is a value.
    Invalid,
}

/// Where the JSON value at the start of `text` (white space allowed before it) ends. Meant
/// for objects and arrays, whose end is their own closing bracket: a bare number at the end
/// of the text could still grow.
pub fn value_end(text: &str) -> Extent {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => Extent::Complete(values.byte_offset()),
        Some(Err(e)) if e.is_eof() => Extent::Incomplete,
        Some(Err(_)) => Extent::Invalid,
        None => Extent::Incomplete,
    }
}

/// `text` is exactly one JSON value (white space around it allowed).
fn whole_value(text: &str) -> Option<&str> {
    let trimmed = text.trim();
    match value_end(trimmed) {
        Extent::Complete(end) if end == trimmed.len() => Some(trimmed),
        _ => None,
    }
}

/// The members of a JSON object, each value's text as written; None when `text` is not one
/// object.
pub fn members(text: &str) -> Option<Vec<(String, &str)>> {
    let text = whole_value(text)?;
    let mut rest = text.strip_prefix('{')?.trim_start();
    let mut out = Vec::new();
    if let Some(after) = rest.strip_prefix('}') {
        return after.is_empty().then_some(out);
    }
    loop {
        let Extent::Complete(end) = value_end(rest) else {
            return None;
        };
        let key: String = serde_json::from_str(&rest[..end]).ok()?;
        rest = rest[end..].trim_start().strip_prefix(':')?.trim_start();
        let Extent::Complete(end) = value_end(rest) else {
            return None;
        };
        out.push((key, &rest[..end]));
        rest = rest[end..].trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
        } else {
            let after = rest.strip_prefix('}')?;
            return after.is_empty().then_some(out);
        }
    }
}

/// The items of a JSON array, each as written; None when `text` is not one array.
pub fn items(text: &str) -> Option<Vec<&str>> {
    let text = whole_value(text)?;
    let mut rest = text.strip_prefix('[')?.trim_start();
    let mut out = Vec::new();
    if let Some(after) = rest.strip_prefix(']') {
        return after.is_empty().then_some(out);
    }
    loop {
        let Extent::Complete(end) = value_end(rest) else {
            return None;
        };
        out.push(&rest[..end]);
        rest = rest[end..].trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
        } else {
            let after = rest.strip_prefix(']')?;
            return after.is_empty().then_some(out);
        }
    }
}

/// One call written as a JSON object: a non-empty `name` and its arguments under `arguments`
/// (Llama 3 writes `parameters`); other members (Mistral's `id`) are ignored. None when it is
/// not one.
pub fn call_object(text: &str) -> Option<ParsedCall> {
    let members = members(text)?;
    let name = members.iter().find(|(key, _)| key == "name")?.1;
    let name: String = serde_json::from_str(name).ok()?;
    if name.is_empty() {
        return None;
    }
    let arguments = members
        .iter()
        .find(|(key, _)| key == "arguments" || key == "parameters")
        .map(|(_, value)| *value);
    Some(ParsedCall {
        name,
        arguments: arguments_text(arguments)?,
    })
}

/// The call object at the start of `text` while it is still being written: its name read
/// and its arguments' object begun. `arguments` is as much of that object's text as has come,
/// which is where the whole call's arguments will start (they are the model's own text). None
/// until then, and for calls this cannot follow (arguments before the name, or in a string).
pub fn open_call_object(text: &str) -> Option<ParsedCall> {
    let mut rest = text.trim_start().strip_prefix('{')?;
    let mut name = None;
    loop {
        rest = rest.trim_start();
        let Extent::Complete(end) = value_end(rest) else {
            return None;
        };
        let key: String = serde_json::from_str(&rest[..end]).ok()?;
        rest = rest[end..].trim_start().strip_prefix(':')?.trim_start();
        let arguments = key == "arguments" || key == "parameters";
        if arguments && rest.starts_with('{') {
            let name: String = name.filter(|n: &String| !n.is_empty())?;
            let written = match value_end(rest) {
                Extent::Complete(end) => &rest[..end],
                Extent::Incomplete => rest,
                Extent::Invalid => return None,
            };
            return Some(ParsedCall {
                name,
                arguments: written.to_string(),
            });
        }
        let Extent::Complete(end) = value_end(rest) else {
            return None;
        };
        if key == "name" {
            name = serde_json::from_str(&rest[..end]).ok();
        }
        rest = rest[end..].trim_start().strip_prefix(',')?;
    }
}

/// The calls of a JSON array of call objects (or of one object) that is still being written:
/// the items that have ended, then the one still open. Empty when an ended item is not a call.
pub fn open_calls(text: &str) -> Vec<ParsedCall> {
    let Some(mut rest) = text.trim_start().strip_prefix('[') else {
        return open_call_object(text).into_iter().collect();
    };
    let mut calls = Vec::new();
    loop {
        rest = rest.trim_start();
        match value_end(rest) {
            Extent::Complete(end) => {
                let Some(call) = call_object(&rest[..end]) else {
                    return Vec::new();
                };
                calls.push(call);
                match rest[end..].trim_start().strip_prefix(',') {
                    Some(after) => rest = after,
                    None => return calls,
                }
            }
            Extent::Incomplete => {
                calls.extend(open_call_object(rest));
                return calls;
            }
            Extent::Invalid => return Vec::new(),
        }
    }
}

/// A call's arguments as a JSON object's text: the model's own, or the object inside a JSON
/// string (some models quote their arguments), or `{}` when there are none.
pub fn arguments_text(value: Option<&str>) -> Option<String> {
    let Some(value) = value.map(str::trim) else {
        return Some("{}".into());
    };
    match serde_json::from_str::<Value>(value).ok()? {
        Value::Null => Some("{}".into()),
        Value::Object(_) => Some(value.to_string()),
        Value::String(inner) => {
            let inner = inner.trim();
            serde_json::from_str::<serde_json::Map<String, Value>>(inner).ok()?;
            Some(inner.to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_ends_at_its_closing_bracket_or_is_still_open_or_broken() {
        assert_eq!(value_end(r#" {"a": [1, "}"]} tail"#), Extent::Complete(16));
        assert_eq!(value_end(r#"{"a": "x"#), Extent::Incomplete);
        assert_eq!(value_end(""), Extent::Incomplete);
        assert_eq!(value_end(r#"{"a" 1}"#), Extent::Invalid);
    }

    #[test]
    fn members_keep_each_value_as_written() {
        let m = members(r#"{"name": "f", "arguments": { "x" : 1 }}"#).unwrap();
        assert_eq!(m[1], ("arguments".to_string(), r#"{ "x" : 1 }"#));
        assert_eq!(members("{}").unwrap(), vec![]);
        assert!(members(r#"{"a": 1} x"#).is_none());
        assert_eq!(
            items(r#"[ {"a": 1} , 2 ]"#).unwrap(),
            vec![r#"{"a": 1}"#, "2"]
        );
    }

    #[test]
    fn an_open_call_has_its_name_and_the_arguments_so_far() {
        let open = open_call_object(r#"{"name": "f", "arguments": {"x": "ab"#).unwrap();
        assert_eq!(
            (open.name.as_str(), open.arguments.as_str()),
            ("f", r#"{"x": "ab"#)
        );
        let ended = open_call_object(r#"{"name": "f", "arguments": {"x": 1} "#).unwrap();
        assert_eq!(ended.arguments, r#"{"x": 1}"#);
        assert!(open_call_object(r#"{"name": "f", "argu"#).is_none());
        assert!(open_call_object(r#"{"arguments": {"x": 1}, "name": "f""#).is_none());
        assert!(open_call_object(r#"{"name": "f", "arguments": "{\"x"#).is_none());
        let calls = open_calls(r#"[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"#);
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(open_calls(r#"[{"x": 1}, {"name": "b", "arguments": {"#).is_empty());
    }

    #[test]
    fn arguments_in_a_string_are_unquoted_and_missing_ones_are_empty() {
        let quoted = arguments_text(Some(r#""{\"x\": 1}""#)).unwrap();
        assert_eq!(quoted, r#"{"x": 1}"#);
        assert_eq!(arguments_text(None).unwrap(), "{}");
        assert_eq!(arguments_text(Some("null")).unwrap(), "{}");
        assert!(arguments_text(Some("[1]")).is_none());
        assert!(arguments_text(Some(r#""not json""#)).is_none());
    }
}
