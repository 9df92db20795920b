//! `taper serve`: the engine as an OpenAI-compatible HTTP server with batched decoding.
//!
//! - [`auth`]: the bind policy and the API key check.
//! - [`request`] / [`fields`] / [`tools`]: request bodies parsed and checked; [`error`]:
//!   OpenAI-style errors.
//! - [`routes`]: the endpoints; [`stream`]: SSE answers; [`response`]: the answers' JSON.
//! - [`roster`]: the models served (`-m` once or more), loaded before the server listens as
//!   far as `--keep-loaded` and the memory budget allow, the rest on demand (the least
//!   recently used idle ones unloaded for them); the request's `model` field picks. [`room`]:
//!   the budget they share and which idle models leave to make room.
//! - [`models`]: one loaded model: an engine host (`crate::engine`, with `--parallel` slots)
//!   that decodes its requests in batched passes; each request is submitted with an event
//!   channel of its own.
//! - [`http`]: the connection loop (header deadline, connection cap); [`log`]: a line per
//!   request on stderr.

pub mod auth;
pub mod error;
pub mod fields;
pub mod http;
pub mod log;
pub mod models;
pub mod request;
pub mod response;
pub mod room;
pub mod roster;
pub mod routes;
pub mod stream;
pub mod tools;

use crate::engine::model::CacheOptions;
use crate::protocol::{SamplingParams, Speculation};
use anyhow::{Context, Result};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

/// One model `taper serve` answers with, resolved.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    pub path: PathBuf,
    pub tokenizer_json: Option<PathBuf>,
    pub chat_template: Option<String>,
    /// The draft model of `Speculation::Draft`.
    pub draft_model: Option<PathBuf>,
}

/// Everything `taper serve` was asked for, resolved.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// At least one; a request that names none is answered by the first.
    pub models: Vec<ModelOptions>,
    pub host: IpAddr,
    pub port: u16,
    pub parallel: usize,
    pub cache: CacheOptions,
    pub api_key: Option<String>,
    /// Requests waiting for a slot at most; more get a 503.
    pub queue: usize,
    pub limits: request::Limits,
    pub defaults: SamplingParams,
    pub default_max_tokens: usize,
    pub speculation: Speculation,
    pub connections: http::ConnectionLimits,
    pub body_timeout: Duration,
    /// Threads of the HTTP runtime (the engine computes on its own pool).
    pub http_threads: usize,
    /// How each request is logged on stderr.
    pub log_format: log::LogFormat,
    /// Models loaded at once at most (`--keep-loaded`).
    pub keep_loaded: usize,
    /// What the loaded models may take together (`--memory-budget`); never more than the
    /// machine has available.
    pub memory_budget: Option<u64>,
}

/// A JSON body with its status.
pub fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Loads the models that fit the budget (an engine host with its slots each), listens, and
/// serves until stopped, loading the others when they are asked for.
pub fn serve(options: ServeOptions) -> Result<()> {
    auth::check_bind(options.host, options.api_key.as_deref())?;
    let parallel = options.parallel;
    let budget = room::Budget::new(
        options.memory_budget,
        crate::stats::available_memory_bytes(),
        options.keep_loaded,
    );
    let roster = Arc::new(roster::Roster::start(
        &options.models,
        options.cache,
        parallel,
        budget,
        options.log_format,
    )?);
    let state = Arc::new(routes::AppState {
        roster: roster.clone(),
        queue: options.queue,
        parallel,
        defaults: options.defaults.clone(),
        default_max_tokens: options.default_max_tokens,
        speculation: options.speculation,
        limits: options.limits,
        api_key: options.api_key.clone(),
        body_timeout: options.body_timeout,
        next_id: AtomicU64::new(1),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.http_threads.max(1))
        .thread_name("taper-serve-http")
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let address = SocketAddr::new(options.host, options.port);
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("cannot listen on {address}"))?;
        let bound = listener.local_addr()?;
        println!("taper serve: {}", listening(&state.roster, bound, parallel));
        let logged =
            axum::middleware::from_fn_with_state(Arc::new(options.log_format), log::log_requests);
        let router = routes::router(state).layer(logged);
        http::serve(listener, router, options.connections).await;
        Ok::<(), anyhow::Error>(())
    })?;
    roster.stop_all();
    Ok(())
}

/// The line that says the server is up: its models, its URL, its slots, and which models
/// load when asked for.
fn listening(roster: &roster::Roster, bound: SocketAddr, parallel: usize) -> String {
    let described = |m: &roster::Listed| format!("{} (context {})", m.name, m.footprint.context);
    let (loaded, later): (Vec<&roster::Listed>, Vec<&roster::Listed>) =
        roster.models.iter().partition(|m| m.is_loaded());
    let mut line = match loaded.as_slice() {
        [one] if later.is_empty() => format!(
            "{} on http://{bound}/v1 ({parallel} slots, context {})",
            one.name, one.footprint.context
        ),
        _ => {
            let each: Vec<String> = loaded.iter().map(|m| described(m)).collect();
            format!(
                "{} on http://{bound}/v1 ({parallel} slots each)",
                each.join(", ")
            )
        }
    };
    if !later.is_empty() {
        let each: Vec<String> = later.iter().map(|m| described(m)).collect();
        let budget = &roster.budget;
        line.push_str(&format!(
            "; loaded when asked for: {} (at most {} loaded at once{})",
            each.join(", "),
            budget.models,
            budget.bytes.map_or(String::new(), |b| format!(
                ", within {}",
                crate::stats::human_bytes(b)
            ))
        ));
    }
    line
}
