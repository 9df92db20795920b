//! The request log: one line per request on stderr (time, method, path, status, the prompt's,
//! cached and generated tokens, seconds taken), as text for people or JSON for machines, and
//! never a body or a key. A completion is logged when its answer ends (streamed ones after the
//! response has started), everything else when its response is ready.

use crate::protocol::Usage;
use crate::sessions::time::{now_s, rfc3339_utc};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// How requests are logged (`--log-format`, `--quiet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
    /// Nothing.
    Off,
}

/// One request, from its arrival to its line.
#[derive(Debug, Clone)]
pub struct Pending {
    format: LogFormat,
    method: String,
    path: String,
    started: Instant,
}

/// A response whose request the handler logs itself, later (a completion).
#[derive(Debug, Clone)]
pub struct LoggedLater;

impl Pending {
    /// Writes the line: `status`, and the answer's token counts when there was one.
    pub fn done(&self, status: u16, usage: Option<&Usage>) {
        let seconds = self.started.elapsed().as_secs_f64();
        let (prompt, cached, generated) = usage.map_or((0, 0, 0), |u| {
            (u.prompt_tokens, u.cached_tokens, u.generated_tokens)
        });
        let time = rfc3339_utc(now_s());
        match self.format {
            LogFormat::Off => {}
            LogFormat::Text => eprintln!(
                "{time} {} {} {status} prompt {prompt} cached {cached} generated {generated} \
                 {seconds:.3} s",
                self.method, self.path
            ),
            LogFormat::Json => eprintln!(
                "{}",
                json!({
                    "time": time,
                    "method": self.method,
                    "path": self.path,
                    "status": status,
                    "prompt_tokens": prompt,
                    "cached_tokens": cached,
                    "generated_tokens": generated,
                    "duration_s": (seconds * 1e3).round() / 1e3,
                })
            ),
        }
    }
}

/// The middleware: a [`Pending`] line for every request (handlers find it in the request's
/// extensions), written when the response is ready unless the handler took it over.
pub async fn log_requests(
    State(format): State<Arc<LogFormat>>,
    mut request: Request,
    next: Next,
) -> Response {
    let pending = Pending {
        format: *format,
        method: request.method().to_string(),
        // The path only: a query string could hold anything.
        path: request.uri().path().to_string(),
        started: Instant::now(),
    };
    request.extensions_mut().insert(pending.clone());
    let response = next.run(request).await;
    if response.extensions().get::<LoggedLater>().is_none() {
        pending.done(response.status().as_u16(), None);
    }
    response
}

/// A line about the server itself rather than a request (`what` is `model_loaded`,
/// `model_unloaded` or `notice`), in the requests' format, so a JSON log stays one object per line.
pub fn event(format: LogFormat, what: &str, model: &str, detail: &str) {
    let time = rfc3339_utc(now_s());
    match format {
        LogFormat::Off => {}
        LogFormat::Text => eprintln!("{time} {} {model} {detail}", what.replace('_', " ")),
        LogFormat::Json => eprintln!(
            "{}",
            json!({ "time": time, "event": what, "model": model, "detail": detail })
        ),
    }
}

/// What a model's load wants the user to know (a missing chat template, say): a `taper:` line
/// as the other commands print it, or a JSON object in a JSON log; said even when requests are
/// not logged.
pub fn notice(format: LogFormat, model: &str, notice: &str) {
    match format {
        LogFormat::Text | LogFormat::Off => eprintln!("taper: {notice}"),
        LogFormat::Json => event(format, "notice", model, notice),
    }
}
