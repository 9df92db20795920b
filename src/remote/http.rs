//! Requests to a remote, and what went wrong in one sentence: connection refused, a name that
//! does not resolve, TLS, 401/403 (naming the variable to set), 404, 429 and 5xx (with
//! `Retry-After`), redirects (never followed: the key must not travel to another host).

use super::chunk::{error_message, one_line};
use super::Remote;
use std::io::Read;
use std::time::Duration;

/// Connecting may take this long (a listing must not hold the picker up).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes read from an error body or a model list.
const MAX_BODY: u64 = 4 << 20;

/// An agent that never follows redirects and gives up on a silent connection after `read`.
pub fn agent(read: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(CONNECT_TIMEOUT)
        .timeout_read(read)
        .timeout_write(read)
        .redirects(0)
        .user_agent(concat!("taper/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// A request with the remote's key, if it has one.
pub fn request(agent: &ureq::Agent, method: &str, remote: &Remote, url: &str) -> ureq::Request {
    let r = agent.request(method, url);
    match &remote.key {
        Some(key) => r.set("Authorization", &format!("Bearer {}", key.expose())),
        None => r,
    }
}

/// A GET whose JSON answer is read whole, bounded in size and in time (`limit` for all of
/// it: a server that trickles an endless body must not hold a listing or a connect up);
/// failures are sentences.
pub fn get_json(remote: &Remote, url: &str, limit: Duration) -> Result<serde_json::Value, String> {
    let response = request(&agent(limit), "GET", remote, url)
        .timeout(limit)
        .call()
        .map_err(|e| failure(remote, e, None))?;
    let response = redirect_check(remote, response)?;
    let mut body = String::new();
    response
        .into_reader()
        .take(MAX_BODY)
        .read_to_string(&mut body)
        .map_err(|e| format!("{}: the answer could not be read: {e}", remote.name))?;
    serde_json::from_str(&body)
        .map_err(|e| format!("{} did not answer {url} with JSON ({e})", remote.name))
}

/// A 3xx (ureq returns it as is, redirects being off) is refused with where it pointed.
pub fn redirect_check(remote: &Remote, response: ureq::Response) -> Result<ureq::Response, String> {
    if !(300..400).contains(&response.status()) {
        return Ok(response);
    }
    let to = response
        .header("location")
        .map(|l| one_line(l, 200))
        .unwrap_or_default();
    Err(format!(
        "{} redirected to {to:?} ({}); taper does not follow redirects, so the key never goes \
         to another host: put the final URL in the remote's url",
        remote.name,
        response.status()
    ))
}

/// One sentence for a failed request. `model` names the model a 404 is about.
pub fn failure(remote: &Remote, error: ureq::Error, model: Option<&str>) -> String {
    match error {
        ureq::Error::Status(code, response) => status_failure(remote, code, response, model),
        ureq::Error::Transport(t) => transport_failure(remote, &t),
    }
}

fn status_failure(
    remote: &Remote,
    code: u16,
    response: ureq::Response,
    model: Option<&str>,
) -> String {
    let name = &remote.name;
    let retry = response
        .header("retry-after")
        .map(|r| format!("; retry after {} s", one_line(r, 40)))
        .unwrap_or_default();
    let mut body = String::new();
    let _ = response
        .into_reader()
        .take(64 * 1024)
        .read_to_string(&mut body);
    let said = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| error_message(&v))
        // A plain-text reason is worth quoting; an HTML error page is not.
        .or_else(|| {
            let plain = !body.trim().is_empty() && !body.trim_start().starts_with('<');
            plain.then(|| one_line(&body, 160))
        })
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    match code {
        401 | 403 => {
            let what = if code == 401 {
                "wants a valid API key"
            } else {
                "refused the API key"
            };
            let fix = match (&remote.key_env, &remote.key) {
                (Some(var), None) => format!("export {var} with the key (it is not set)"),
                (Some(var), Some(_)) => format!("check the key in {var}"),
                (None, _) => {
                    format!("set api_key_env for remote `{name}` and export that variable")
                }
            };
            format!("{name} {what} ({code}){said}: {fix}")
        }
        404 => match model {
            Some(m) => format!("{name} does not serve model {m:?} (404){said}"),
            None => format!(
                "{name} answered 404 Not Found{said}: is its url right (usually ending in /v1)?"
            ),
        },
        429 => format!("{name} is rate-limiting requests (429){said}{retry}"),
        500..=599 => format!("{name} failed with a server error ({code}){said}{retry}"),
        _ => format!("{name} answered {code}{said}"),
    }
}

fn transport_failure(remote: &Remote, t: &ureq::Transport) -> String {
    let host = remote.host();
    let name = &remote.name;
    // The chain's sources say what the kind alone does not (refused, TLS, timed out).
    let mut detail = t.message().map(str::to_string).unwrap_or_default();
    let mut io_kind = None;
    let mut innermost = None;
    let mut source = std::error::Error::source(t);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            io_kind.get_or_insert(io.kind());
        }
        innermost = Some(e.to_string());
        source = e.source();
    }
    // ureq's message says what it was doing; the innermost cause says why (TLS: which check).
    if let Some(cause) = innermost.filter(|c| !detail.contains(c.as_str())) {
        detail = match detail.is_empty() {
            true => cause,
            false => format!("{detail}: {cause}"),
        };
    }
    let lower = detail.to_lowercase();
    match t.kind() {
        ureq::ErrorKind::Dns => format!("{name}: the host name in {host} does not resolve"),
        _ if io_kind == Some(std::io::ErrorKind::ConnectionRefused) => {
            format!("{name}: connection refused at {host}: is the server running?")
        }
        _ if ["certificate", "tls", "handshake", "alert"]
            .iter()
            .any(|w| lower.contains(w)) =>
        {
            format!("{name}: TLS error with {host}: {}", one_line(&detail, 200))
        }
        _ if matches!(
            io_kind,
            Some(std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock)
        ) =>
        {
            format!("{name}: no answer from {host} in time")
        }
        ureq::ErrorKind::UnknownScheme | ureq::ErrorKind::InvalidUrl => {
            format!("{name}: the url {} is not valid", remote.base_url)
        }
        _ => format!("{name}: cannot talk to {host}: {}", one_line(&detail, 200)),
    }
}
