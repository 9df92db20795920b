//! Reading one field of a JSON request: absent or null is "not given", a value of the wrong
//! type or outside its range is an error that names the field.

use super::error::ApiError;
use serde_json::{Map, Value};

pub type Object = Map<String, Value>;

/// The value of `name`, unless absent or null.
fn given<'a>(obj: &'a Object, name: &str) -> Option<&'a Value> {
    obj.get(name).filter(|v| !v.is_null())
}

/// A number in `min..=max`.
pub fn number(obj: &Object, name: &str, min: f64, max: f64) -> Result<Option<f64>, ApiError> {
    let Some(value) = given(obj, name) else {
        return Ok(None);
    };
    match value.as_f64() {
        Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
        Some(n) => Err(ApiError::field(
            name,
            format!("`{name}` must be between {min} and {max}, not {n}"),
        )),
        None => Err(ApiError::field(name, format!("`{name}` must be a number"))),
    }
}

/// A whole number in `min..=max`.
pub fn integer(obj: &Object, name: &str, min: i64, max: i64) -> Result<Option<i64>, ApiError> {
    let Some(value) = given(obj, name) else {
        return Ok(None);
    };
    // 2.0 is a whole number too (some clients send every number as a float).
    let whole = value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .map(|f| f as i64)
    });
    match whole {
        Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
        Some(n) => Err(ApiError::field(
            name,
            format!("`{name}` must be between {min} and {max}, not {n}"),
        )),
        None => Err(ApiError::field(
            name,
            format!("`{name}` must be a whole number"),
        )),
    }
}

pub fn boolean(obj: &Object, name: &str) -> Result<Option<bool>, ApiError> {
    match given(obj, name) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::field(
            name,
            format!("`{name}` must be true or false"),
        )),
    }
}

pub fn string<'a>(obj: &'a Object, name: &str) -> Result<Option<&'a str>, ApiError> {
    match given(obj, name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::field(name, format!("`{name}` must be a string"))),
    }
}

pub fn object<'a>(obj: &'a Object, name: &str) -> Result<Option<&'a Object>, ApiError> {
    match given(obj, name) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(ApiError::field(name, format!("`{name}` must be an object"))),
    }
}

/// `stop`: one string or an array of at most `max` strings (empty strings ignored).
pub fn stop_strings(obj: &Object, max: usize, max_len: usize) -> Result<Vec<String>, ApiError> {
    let strings: Vec<&Value> = match given(obj, "stop") {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one) => vec![one],
    };
    if strings.len() > max {
        return Err(ApiError::field(
            "stop",
            format!("`stop` may hold at most {max} strings"),
        ));
    }
    let mut out = Vec::new();
    for s in strings {
        match s.as_str() {
            Some(s) if s.len() > max_len => {
                return Err(ApiError::field(
                    "stop",
                    format!("each `stop` string may be at most {max_len} bytes"),
                ))
            }
            Some("") => {}
            Some(s) => out.push(s.to_string()),
            None => {
                return Err(ApiError::field(
                    "stop",
                    "`stop` must be a string or an array of strings",
                ))
            }
        }
    }
    Ok(out)
}
