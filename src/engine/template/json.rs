//! `tojson` as transformers defines it (Python's `json.dumps`), and Python's float repr.

use minijinja::value::{Kwargs, Rest, ValueKind, ValueOrKwargs};
use minijinja::{Error, ErrorKind, State, Value};
use std::fmt::Write as _;

/// Templates build values, so nesting can be made arbitrarily deep in a loop; recursion in
/// the serializer must stop long before the thread's stack does.
const MAX_JSON_DEPTH: usize = 128;
/// A list that holds the same sub-list twice, nested n times, is 2^n items long when
/// written out, so the output is paid for (in fuel) as it grows rather than afterwards.
const JSON_CHARGE_EVERY: usize = 16 * 1024;
/// Serializing costs more than copying; minijinja charges its own `tojson` similarly.
const JSON_BYTES_PER_FUEL: usize = 8;

/// `tojson` as transformers defines it: `json.dumps(x, ensure_ascii=False, indent=None,
/// separators=None, sort_keys=False)`. Jinja's own filter escapes HTML characters and only
/// knows `indent`, which changes the prompt a model was trained on.
pub fn tojson(state: &State, value: &Value, args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = args.into_values();
    // Positional arguments follow the Python signature, so `x|tojson(true)` means
    // ensure_ascii exactly as it does in transformers. Keyword arguments arrive as a final
    // kwargs value, which a plain `Option<Value>` parameter would swallow.
    let (positional, kwargs) = match args.split_last() {
        Some((last, rest)) if last.is_kwargs() => (rest, Kwargs::try_from(last.clone())?),
        _ => (
            &args[..],
            Kwargs::from_iter(std::iter::empty::<(&str, Value)>()),
        ),
    };
    if positional.len() > 4 {
        return Err(Error::from(ErrorKind::TooManyArguments));
    }
    let positional = |i: usize| positional.get(i).cloned();
    let (ensure_ascii, indent, separators, sort_keys) =
        (positional(0), positional(1), positional(2), positional(3));
    let pick = |positional: Option<Value>, name: &str| -> Result<Value, Error> {
        Ok(match positional {
            Some(v) => v,
            None => kwargs
                .get::<Option<Value>>(name)?
                .unwrap_or(Value::UNDEFINED),
        })
    };
    let ensure_ascii = pick(ensure_ascii, "ensure_ascii")?.is_true();
    let indent = pick(indent, "indent")?;
    let separators = pick(separators, "separators")?;
    let sort_keys = pick(sort_keys, "sort_keys")?.is_true();
    kwargs.assert_all_used()?;

    let indent = match indent.kind() {
        ValueKind::Undefined | ValueKind::None => None,
        ValueKind::String => Some(indent.as_str().unwrap_or_default().to_string()),
        // Python treats True as 1; a negative indent means "newlines only".
        ValueKind::Bool => Some(if indent.is_true() { " " } else { "" }.to_string()),
        ValueKind::Number => {
            let n = indent
                .as_i64()
                .ok_or_else(|| bad_arg("indent must be an integer"))?;
            let n = usize::try_from(n.clamp(0, 64)).unwrap_or(0);
            Some(" ".repeat(n))
        }
        _ => return Err(bad_arg("indent must be an integer or a string")),
    };
    let (item_sep, key_sep) = if separators.is_undefined() || separators.is_none() {
        // Python's defaults depend on whether the output is indented.
        let item = if indent.is_some() { "," } else { ", " };
        (item.to_string(), ": ".to_string())
    } else {
        let parts: Vec<Value> = separators.try_iter()?.collect();
        match parts.as_slice() {
            [item, key] => match (item.as_str(), key.as_str()) {
                (Some(item), Some(key)) => (item.to_string(), key.to_string()),
                _ => return Err(bad_arg("separators must be two strings")),
            },
            _ => return Err(bad_arg("separators must be a pair (item, key)")),
        }
    };
    let mut writer = JsonWriter {
        state,
        charged: 0,
        out: String::new(),
        ensure_ascii,
        sort_keys,
        indent,
        item_sep,
        key_sep,
    };
    writer.value(value, 0)?;
    // Not marked safe: auto-escaping is off for chat templates, so this only matters to
    // templates that test `is safe`, and Jinja's plain strings are not.
    Ok(Value::from(writer.out))
}

fn bad_arg(msg: &'static str) -> Error {
    Error::new(ErrorKind::InvalidOperation, format!("tojson: {msg}"))
}

struct JsonWriter<'s, 'a, 'b> {
    state: &'s State<'a, 'b>,
    /// How much of `out` has been paid for.
    charged: usize,
    out: String,
    ensure_ascii: bool,
    sort_keys: bool,
    indent: Option<String>,
    item_sep: String,
    key_sep: String,
}

impl JsonWriter<'_, '_, '_> {
    fn value(&mut self, value: &Value, depth: usize) -> Result<(), Error> {
        if depth > MAX_JSON_DEPTH {
            return Err(bad_arg("value is nested too deeply"));
        }
        if self.out.len() - self.charged >= JSON_CHARGE_EVERY {
            let fuel = (self.out.len() - self.charged) / JSON_BYTES_PER_FUEL;
            self.state.consume_fuel(fuel as u64)?;
            self.charged = self.out.len();
        }
        match value.kind() {
            ValueKind::Undefined | ValueKind::None => self.out.push_str("null"),
            ValueKind::Bool => self
                .out
                .push_str(if value.is_true() { "true" } else { "false" }),
            ValueKind::Number => self.number(value),
            ValueKind::String => self.string(value.as_str().unwrap_or_default()),
            ValueKind::Seq | ValueKind::Iterable => {
                self.out.push('[');
                let mut count = 0;
                for item in value.try_iter()? {
                    // Every item is paid for, so even an endless iterable ends.
                    self.state.consume_fuel(1)?;
                    self.separator(count, depth + 1);
                    self.value(&item, depth + 1)?;
                    count += 1;
                }
                self.close(']', count == 0, depth);
            }
            ValueKind::Map => {
                let mut entries = Vec::new();
                for key in value.try_iter()? {
                    self.state.consume_fuel(1)?;
                    let item = value.get_item(&key)?;
                    entries.push((map_key(&key)?, item));
                }
                if self.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                }
                self.out.push('{');
                for (i, (key, item)) in entries.iter().enumerate() {
                    self.separator(i, depth + 1);
                    self.string(key);
                    self.out.push_str(&self.key_sep);
                    self.value(item, depth + 1)?;
                }
                self.close('}', entries.is_empty(), depth);
            }
            kind => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("tojson: a {kind} is not JSON serializable"),
                ))
            }
        }
        Ok(())
    }

    fn separator(&mut self, index: usize, depth: usize) {
        if index > 0 {
            self.out.push_str(&self.item_sep);
        }
        if let Some(indent) = &self.indent {
            self.out.push('\n');
            for _ in 0..depth {
                self.out.push_str(indent);
            }
        }
    }

    fn close(&mut self, bracket: char, empty: bool, depth: usize) {
        // Python writes empty containers as `[]`/`{}` even when indenting.
        if let (Some(indent), false) = (&self.indent, empty) {
            self.out.push('\n');
            for _ in 0..depth {
                self.out.push_str(indent);
            }
        }
        self.out.push(bracket);
    }

    fn number(&mut self, value: &Value) {
        if value.is_integer() {
            let _ = write!(self.out, "{value}");
        } else {
            let f = f64::try_from(value.clone()).unwrap_or(f64::NAN);
            self.out.push_str(&python_float_repr(f));
        }
    }

    fn string(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                '\u{8}' => self.out.push_str("\\b"),
                '\u{c}' => self.out.push_str("\\f"),
                c if (c as u32) < 0x20 || (self.ensure_ascii && !(' '..='~').contains(&c)) => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        let _ = write!(self.out, "\\u{unit:04x}");
                    }
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }
}

/// JSON object keys as Python converts them: strings as they are, numbers and constants
/// spelled as JSON would spell the value.
fn map_key(key: &Value) -> Result<String, Error> {
    Ok(match key.kind() {
        ValueKind::String => key.as_str().unwrap_or_default().to_string(),
        ValueKind::Number if key.is_integer() => key.to_string(),
        ValueKind::Number => python_float_repr(f64::try_from(key.clone()).unwrap_or(f64::NAN)),
        ValueKind::Bool => if key.is_true() { "true" } else { "false" }.to_string(),
        ValueKind::None => "null".to_string(),
        kind => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("tojson: keys must be strings or numbers, not {kind}"),
            ))
        }
    })
}

/// Python's `repr(float)`: the shortest round-tripping digits, in exponent form when the
/// exponent is below -4 or at least 16, and always with a `.0` or exponent for integers.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // Rust's `{:e}` already gives the shortest round-trip digits: "-1.25e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else {
        let point = point as usize;
        if digits.len() <= point {
            format!("{digits}{}.0", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    format!("{sign}{body}")
}
