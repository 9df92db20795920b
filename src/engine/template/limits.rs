//! Guards for the Python string methods (minijinja-contrib's pycompat) that can allocate
//! more than their fuel pays for: `str.format` pads to any width it is given before the
//! result is charged, so `'{:>1000000000}'.format(1)` would take a gigabyte at once.

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, State, Value};

/// The widest field or longest precision a `str.format` spec may ask for. Chat templates
/// pad nothing at all; 10k still leaves room for any table a tool description might print.
pub const MAX_FORMAT_WIDTH: u64 = 10_000;

/// pycompat's method callback, after refusing `str.format` specs that would pad without
/// bound (widths or precisions over [`MAX_FORMAT_WIDTH`], or taken from arguments).
pub fn method_callback(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if method == "format" && value.kind() == ValueKind::String {
        if let Some(s) = value.as_str() {
            check_format_specs(s)?;
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// Walks the replacement fields of a `str.format` string and checks each format spec.
fn check_format_specs(format: &str) -> Result<(), Error> {
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '{' {
            continue;
        }
        if chars.peek() == Some(&'{') {
            chars.next(); // an escaped brace
            continue;
        }
        // The field runs to the matching '}'; anything nested is a spec taken from arguments.
        let mut field = String::new();
        let mut depth = 1usize;
        for c in chars.by_ref() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
            field.push(c);
        }
        if let Some((_, spec)) = field.split_once(':') {
            if spec.contains('{') {
                return Err(refused("a format spec taken from arguments"));
            }
            let widest = spec
                .split(|c: char| !c.is_ascii_digit())
                .filter(|run| !run.is_empty())
                .map(|run| run.parse::<u64>().unwrap_or(u64::MAX))
                .max()
                .unwrap_or(0);
            if widest > MAX_FORMAT_WIDTH {
                return Err(refused(&format!("a format width of {widest}")));
            }
        }
    }
    Ok(())
}

fn refused(what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("str.format with {what} is refused (at most {MAX_FORMAT_WIDTH} characters)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_format_strings_pass() {
        for ok in [
            "",
            "{}",
            "{0} and {name}",
            "{{literal}} 123456789",
            "{:>8.3f}",
            "{:0>5}",
        ] {
            assert!(check_format_specs(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn huge_or_argument_widths_are_refused() {
        for bad in [
            "{:>1000000000}",
            "{:.99999}",
            "{:{}}",
            "x{0:{w}}",
            "{:99999999999999999999999}",
        ] {
            let err = check_format_specs(bad).unwrap_err().to_string();
            assert!(err.contains("is refused"), "{bad}: {err}");
        }
    }
}
