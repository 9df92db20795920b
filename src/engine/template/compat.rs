//! The pieces of Hugging Face's Jinja environment that minijinja lacks or does differently
//! (apart from `tojson`, see the json module): Python's printing of `True`/`None`,
//! `raise_exception`, `strftime_now`, the `iterable` test, and the `{% generation %}` tag.

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, Output, State, Value};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// Prints values as Python's `str()` does where minijinja differs: `True`, `False`, `None`.
pub fn python_formatter(out: &mut Output, state: &mut State, value: &Value) -> Result<(), Error> {
    let text = match value.kind() {
        ValueKind::Bool if value.is_true() => "True",
        ValueKind::Bool => "False",
        ValueKind::None => "None",
        _ => return minijinja::escape_formatter(out, state, value),
    };
    out.write_str(text)
        .map_err(|_| Error::from(ErrorKind::WriteFailure))
}

/// Jinja's `iterable` test as Python answers it: whatever `iter()` accepts. minijinja
/// iterates `none` as an empty sequence and so calls it iterable, but Python's `None` is not,
/// and templates rely on that: `tools is iterable and tools | length > 0` (Qwen3-Coder,
/// Nemotron 3) must be false, not an error, when transformers passes `tools=None`. Undefined
/// stays iterable, as jinja2's `Undefined` is.
pub fn is_iterable(value: &Value) -> bool {
    value.kind() != ValueKind::None && value.try_iter().is_ok()
}

/// The error `raise_exception` raises, kept as the source of the minijinja error so the
/// message can be reported as the template's own words.
#[derive(Debug)]
pub struct RaisedByTemplate(pub String);

impl std::fmt::Display for RaisedByTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RaisedByTemplate {}

pub fn raise_exception(message: Value) -> Result<Value, Error> {
    let message = message.to_string();
    Err(Error::new(ErrorKind::InvalidOperation, message.clone())
        .with_source(RaisedByTemplate(message)))
}

/// `strftime_now(format)`: the current time formatted like Python's `strftime`. There is
/// no time zone database here, so this is UTC rather than local time; templates use it for
/// "Today's date" lines, where that difference is at most a day at midnight.
pub fn strftime_now(format: &str) -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    strftime(format, secs)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Formats a UTC Unix time with the common strftime codes (glibc's `%-d` style flag for no
/// padding included); unknown codes are copied through as glibc does.
pub fn strftime(format: &str, unix_secs: u64) -> String {
    let days = unix_secs / 86_400;
    let secs_of_day = unix_secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (secs_of_day / 3600, secs_of_day / 60 % 60, secs_of_day % 60);
    // 1970-01-01 was a Thursday.
    let weekday = ((days + 4) % 7) as usize;
    let day_of_year = days - days_from_civil(year, 1, 1) + 1;
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    let month_name = MONTHS[(month - 1) as usize];

    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = chars.next();
        let unpadded = spec == Some('-');
        if unpadded {
            spec = chars.next();
        }
        let num = |n: u64, width: usize| {
            if unpadded {
                n.to_string()
            } else {
                format!("{n:0width$}")
            }
        };
        let text = match spec {
            Some('Y') => year.to_string(),
            Some('y') => num(year % 100, 2),
            Some('m') => num(month, 2),
            Some('d') => num(day, 2),
            Some('e') => format!("{day:2}"),
            Some('H') => num(hour, 2),
            Some('I') => num(hour12, 2),
            Some('M') => num(minute, 2),
            Some('S') => num(second, 2),
            Some('j') => num(day_of_year, 3),
            Some('p') => if hour < 12 { "AM" } else { "PM" }.to_string(),
            Some('B') => month_name.to_string(),
            Some('b') | Some('h') => month_name[..3].to_string(),
            Some('A') => WEEKDAYS[weekday].to_string(),
            Some('a') => WEEKDAYS[weekday][..3].to_string(),
            Some('w') => weekday.to_string(),
            Some('Z') => "UTC".to_string(),
            Some('z') => "+0000".to_string(),
            Some('F') => format!("{year}-{month:02}-{day:02}"),
            Some('%') => "%".to_string(),
            Some(other) => format!("%{}{other}", if unpadded { "-" } else { "" }),
            None => "%".to_string(),
        };
        out.push_str(&text);
    }
    out
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar, by
/// counting whole 400-year eras (146097 days) and then years within the era, with years
/// starting in March so the leap day falls at the end.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153; // month index counted from March
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// The inverse of [`civil_from_days`], for years from 1970 on.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year % 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * mp + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// transformers registers a `{% generation %}…{% endgeneration %}` tag that marks assistant
/// text for training masks and otherwise renders its body unchanged. minijinja cannot parse
/// it, so it is rewritten to `{% if true %}…{% endif %}`, which renders the same and keeps
/// the tag's whitespace-control markers.
pub fn rewrite_generation_tags(source: &str) -> Cow<'_, str> {
    if !source.contains("generation") {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        out.push_str(&rest[..start]);
        let tag = &rest[start..];
        // The closing marker comes after the opening one: in `{%}` the two overlap.
        let Some(end) = tag[2..].find("%}").map(|i| i + 2) else {
            out.push_str(tag);
            return Cow::Owned(out);
        };
        let inner = &tag[2..end];
        let body = inner
            .trim_start_matches(['-', '+'])
            .trim_end_matches(['-', '+']);
        let replacement = match body.trim() {
            "generation" => Some("if true"),
            "endgeneration" => Some("endif"),
            _ => None,
        };
        match replacement {
            Some(word) => {
                let lead = &inner[..inner.len() - inner.trim_start_matches(['-', '+']).len()];
                let trail = &inner[inner.trim_end_matches(['-', '+']).len()..];
                let _ = write!(out, "{{%{lead} {word} {trail}%}}");
            }
            None => out.push_str(&tag[..end + 2]),
        }
        rest = &tag[end + 2..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}
