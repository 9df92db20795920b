//! `taper serve`: the engine as an OpenAI-compatible HTTP server with batched decoding.
//!
//! - [`auth`]: the bind policy and the API key check.
//! - [`request`] / [`fields`] / [`tools`]: request bodies parsed and checked; [`error`]:
//!   OpenAI-style errors.
//! - [`routes`]: the endpoints; [`stream`]: SSE answers; [`response`]: the answers' JSON.
//! - The engine host (`crate::engine`, with `--parallel` slots) decodes every request in
//!   batched passes; each request is submitted with an event channel of its own.
//! - [`http`]: the connection loop (header deadline, connection cap); [`log`]: a line per
//!   request on stderr.

pub mod auth;
pub mod error;
pub mod fields;
pub mod http;
pub mod log;
pub mod request;
pub mod response;
pub mod routes;
pub mod stream;
pub mod tools;

use crate::engine::loader::{self, OpenOptions};
use crate::engine::model::CacheOptions;
use crate::engine::{EngineHandle, LocalModel};
use crate::protocol::{SamplingParams, Speculation};
use anyhow::{Context, Result};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

/// Everything `taper serve` was asked for, resolved.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub model_path: PathBuf,
    pub tokenizer_json: Option<PathBuf>,
    pub chat_template: Option<String>,
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
    /// The draft model of `Speculation::Draft`.
    pub draft_model: Option<PathBuf>,
    pub connections: http::ConnectionLimits,
    pub body_timeout: Duration,
    /// Threads of the HTTP runtime (the engine computes on its own pool).
    pub http_threads: usize,
    /// How each request is logged on stderr.
    pub log_format: log::LogFormat,
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

/// Loads the model once, starts the engine host with its slots, listens, and serves until
/// stopped.
pub fn serve(options: ServeOptions) -> Result<()> {
    auth::check_bind(options.host, options.api_key.as_deref())?;
    let open = OpenOptions {
        tokenizer_json: options.tokenizer_json.clone(),
        chat_template: options.chat_template.clone(),
        ..OpenOptions::new(options.cache)
    };
    let loaded = loader::open(&options.model_path, &open)?;
    for notice in &loaded.notices {
        eprintln!("taper: {notice}");
    }
    let context = loaded.info.context_size;
    let mut local = LocalModel::new(loaded)?;
    if let Some(draft) = &options.draft_model {
        local = local.with_draft_read(draft.clone())?;
    }
    let (text, answers) = (local.text.clone(), local.answers.clone());
    // The grammar compiler (the vocabulary's trie, up to a second for a large vocabulary) is
    // built while the server starts, not in the first constrained request's time.
    let warm = text.clone();
    std::thread::Builder::new()
        .name("taper-grammars".into())
        .spawn(move || drop(warm.grammars()))?;
    let parallel = options.parallel;
    // Kept until the server stops: dropping it stops the engine.
    let engine = EngineHandle::serve(local, parallel)?;

    let state = Arc::new(routes::AppState {
        engine: engine.submitter(),
        queue: options.queue,
        text,
        answers,
        model_name: model_name(&options.model_path),
        context,
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
        println!(
            "taper serve: {} on http://{bound}/v1 ({parallel} slots, context {context})",
            state.model_name
        );
        let logged =
            axum::middleware::from_fn_with_state(Arc::new(options.log_format), log::log_requests);
        let router = routes::router(state).layer(logged);
        http::serve(listener, router, options.connections).await;
        Ok::<(), anyhow::Error>(())
    })?;
    drop(engine);
    Ok(())
}

/// The model's id in `/v1/models`: its file name without `.gguf`.
fn model_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into())
}
