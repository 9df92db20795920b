//! The request fields whose JSON shapes serde's own types do not take: a whole number that may
//! be written as 2.0, one string or several (`stop`, `prompt`), a message's content as a string
//! or text parts. Each says in `expecting` what the field must
//! be, so that a wrong value's error (named by serde_path_to_error) says it too.

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use std::fmt;

/// A whole number. 2.0 is one too (some clients send every number as a float); one beyond
/// i64 is taken as i64's limit, which every range checked afterwards refuses or allows alike.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Whole(pub i64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WholeVisitor;
        impl Visitor<'_> for WholeVisitor {
            type Value = Whole;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a whole number")
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Whole, E> {
                Ok(Whole(n))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Whole, E> {
                Ok(Whole(i64::try_from(n).unwrap_or(i64::MAX)))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Whole, E> {
                if n.fract() == 0.0 {
                    // `as` saturates: 1e300 is i64::MAX.
                    Ok(Whole(n as i64))
                } else {
                    Err(E::invalid_value(de::Unexpected::Float(n), &self))
                }
            }
        }
        deserializer.deserialize_any(WholeVisitor)
    }
}

/// One string or an array of strings, in the order given: `stop`, and `prompt` (which takes
/// only one).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Strings(pub Vec<String>);

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StringsVisitor;
        impl<'de> Visitor<'de> for StringsVisitor {
            type Value = Strings;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Strings, E> {
                Ok(Strings(vec![s.to_string()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strings, A::Error> {
                let mut strings = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    strings.push(s);
                }
                Ok(Strings(strings))
            }
        }
        deserializer.deserialize_any(StringsVisitor)
    }
}

/// A message's content: a string, or `[{type: "text", text}]` parts joined by newlines (only
/// text is understood). Parts are separate pieces of text, and a newline keeps them apart as
/// llama-server and vLLM do when they hand a template one string.
#[derive(Debug, Clone, PartialEq)]
pub struct Content(pub String);

/// One part of a message's content.
#[derive(serde::Deserialize)]
struct Part {
    #[serde(rename = "type")]
    _kind: PartKind,
    text: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum PartKind {
    Text,
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of text parts")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut texts = Vec::new();
                while let Some(part) = seq.next_element::<Part>()? {
                    texts.push(part.text);
                }
                Ok(Content(texts.join("\n")))
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}
