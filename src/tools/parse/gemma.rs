//! Gemma 4's and FunctionGemma's own argument syntax turned into JSON: `call:NAME{key:value,…}`
//! with bare keys, strings between a quote marker (`<|"|>` or `<escape>`) and no escapes
//! inside them, numbers, `true`/`false`/`null`, and nested `{…}` and `[…]`.

use super::ParsedCall;

/// Gemma 4's string delimiter.
pub const GEMMA4_QUOTE: &str = "<|\"|>";
/// FunctionGemma's string delimiter.
pub const FUNCTION_GEMMA_QUOTE: &str = "<escape>";

/// The call in `body` (`call:NAME{…}`), its arguments as compact JSON; None when it is not one.
pub fn call(body: &str, quote: &str) -> Option<ParsedCall> {
    let rest = body.trim().strip_prefix("call:")?;
    let brace = rest.find('{')?;
    let name = rest[..brace].trim();
    if name.is_empty() || name.contains(|c: char| c.is_whitespace()) {
        return None;
    }
    let mut reader = Reader {
        text: &rest[brace..],
        quote,
        out: String::new(),
    };
    reader.object()?;
    reader.text.trim().is_empty().then(|| ParsedCall {
        name: name.to_string(),
        arguments: reader.out,
    })
}

/// Reads a value at the start of `text`, writing its JSON to `out`.
struct Reader<'a> {
    text: &'a str,
    quote: &'a str,
    out: String,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        self.text = self.text.trim_start();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        match self.text.strip_prefix(token) {
            Some(rest) => {
                self.text = rest;
                true
            }
            None => false,
        }
    }

    fn value(&mut self) -> Option<()> {
        self.skip_space();
        if self.text.starts_with('{') {
            self.object()
        } else if self.text.starts_with('[') {
            self.array()
        } else if self.text.starts_with(self.quote) {
            let string = self.string()?;
            self.push_string(&string);
            Some(())
        } else {
            self.scalar()
        }
    }

    /// The text between a pair of quote markers.
    fn string(&mut self) -> Option<String> {
        let inside = self.text.strip_prefix(self.quote)?;
        let end = inside.find(self.quote)?;
        self.text = &inside[end + self.quote.len()..];
        Some(inside[..end].to_string())
    }

    fn push_string(&mut self, s: &str) {
        // Serializing a string cannot fail.
        self.out
            .push_str(&serde_json::to_string(s).unwrap_or_default());
    }

    fn object(&mut self) -> Option<()> {
        if !self.eat("{") {
            return None;
        }
        self.out.push('{');
        if self.eat("}") {
            self.out.push('}');
            return Some(());
        }
        loop {
            self.skip_space();
            // Keys are bare, though the template quotes them in some places.
            let key = if self.text.starts_with(self.quote) {
                self.string()?
            } else {
                let end = self.text.find(':')?;
                let key = self.text[..end].trim();
                if key.is_empty() || key.contains(['{', '}', '[', ']', ',']) {
                    return None;
                }
                self.text = &self.text[end..];
                key.to_string()
            };
            self.push_string(&key);
            if !self.eat(":") {
                return None;
            }
            self.out.push(':');
            self.value()?;
            if self.eat(",") {
                self.out.push(',');
            } else if self.eat("}") {
                self.out.push('}');
                return Some(());
            } else {
                return None;
            }
        }
    }

    fn array(&mut self) -> Option<()> {
        if !self.eat("[") {
            return None;
        }
        self.out.push('[');
        if self.eat("]") {
            self.out.push(']');
            return Some(());
        }
        loop {
            self.value()?;
            if self.eat(",") {
                self.out.push(',');
            } else if self.eat("]") {
                self.out.push(']');
                return Some(());
            } else {
                return None;
            }
        }
    }

    /// A number, `true`, `false` or `null`, kept as written (`1.5e10` stays that).
    fn scalar(&mut self) -> Option<()> {
        let end = self.text.find([',', '}', ']']).unwrap_or(self.text.len());
        let token = self.text[..end].trim();
        let valid = matches!(token, "true" | "false" | "null")
            || serde_json::from_str::<serde_json::Number>(token).is_ok();
        if !valid {
            return None;
        }
        self.out.push_str(token);
        self.text = &self.text[end..];
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemma_values_become_compact_json() {
        let c = call(
            "call:f{a:<|\"|>x \"y\"<|\"|>,n:-7,e:1.5e10,b:true,z:null,o:{k:[1,<|\"|>s<|\"|>]},l:[]}",
            GEMMA4_QUOTE,
        )
        .unwrap();
        assert_eq!(c.name, "f");
        assert_eq!(
            c.arguments,
            r#"{"a":"x \"y\"","n":-7,"e":1.5e10,"b":true,"z":null,"o":{"k":[1,"s"]},"l":[]}"#
        );
    }

    #[test]
    fn broken_gemma_calls_are_refused() {
        for body in [
            "call:f{a:}",
            "call:f{a:bare}",
            "call:{a:1}",
            "f{a:1}",
            "call:f{a:1",
        ] {
            assert!(call(body, GEMMA4_QUOTE).is_none(), "{body}");
        }
    }
}
