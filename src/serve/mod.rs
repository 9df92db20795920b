//! `taper serve`: the engine as an OpenAI-compatible HTTP server with batched decoding.
//!
//! - [`auth`]: the bind policy and the API key check.
//! - [`request`] / [`fields`]: request bodies parsed and checked; [`error`]: OpenAI-style errors.
//! - [`routes`]: the endpoints; [`stream`]: SSE answers; [`response`]: the answers' JSON.
//! - [`scheduler`] / [`slot`]: the engine thread, its slots and the batched decode loop;
//!   [`job`]: what passes between the two sides; [`stops`], [`penalties`]: per-request
//!   sampling extras.
//! - [`http`]: the connection loop (header deadline, connection cap).

pub mod auth;
pub mod error;
pub mod fields;
pub mod http;
pub mod job;
pub mod penalties;
pub mod request;
pub mod response;
pub mod routes;
pub mod scheduler;
pub mod slot;
pub mod stops;
pub mod stream;

use crate::engine::answer_ids::AnswerIds;
use crate::engine::gguf::GgufHeader;
use crate::engine::model::{self, CacheOptions, ModelConfig};
use crate::engine::prompt::ModelText;
use crate::engine::sampler::SamplingParams;
use anyhow::{anyhow, Context, Result};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{mpsc, Arc, Mutex};
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
    pub connections: http::ConnectionLimits,
    pub body_timeout: Duration,
    /// Threads of the HTTP runtime (the engine computes on its own pool).
    pub http_threads: usize,
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

/// Loads the model once, starts the engine thread, listens, and serves until stopped.
pub fn serve(options: ServeOptions) -> Result<()> {
    auth::check_bind(options.host, options.api_key.as_deref())?;
    let header = GgufHeader::read(&options.model_path)?;
    ModelConfig::from_header(&header).with_context(|| header.path.display().to_string())?;
    let (text, model) = model::load_beside(&header, options.cache, || {
        ModelText::load(
            &header,
            options.tokenizer_json.as_deref(),
            options.chat_template.as_deref(),
        )
    });
    let text = Arc::new(text?);
    let model = model?;
    if let Some(notice) = text.template.notice() {
        eprintln!("taper: {notice}");
    }
    let context = model.context_size();
    check_slots_fit(model.as_ref(), options.parallel)?;
    let answers = Arc::new(Mutex::new(AnswerIds::default()));
    let (jobs, job_queue) = mpsc::sync_channel(options.queue);
    let status = Arc::new(scheduler::Status::default());
    let (ready_tx, ready) = mpsc::channel::<Result<()>>();
    let engine_text = text.clone();
    let engine_answers = answers.clone();
    let engine_status = status.clone();
    let parallel = options.parallel;
    std::thread::Builder::new()
        .name("taper-serve-engine".into())
        .spawn(move || {
            let made = scheduler::Scheduler::new(
                model,
                &engine_text.tokenizer,
                &engine_answers,
                parallel,
                job_queue,
                engine_status,
            );
            match made {
                Ok(mut scheduler) => {
                    let _ = ready_tx.send(Ok(()));
                    scheduler.run();
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            }
        })?;
    ready
        .recv()
        .map_err(|_| anyhow!("the engine thread stopped while starting"))??;

    let state = Arc::new(routes::AppState {
        jobs,
        status,
        text,
        answers,
        model_name: model_name(&options.model_path),
        context,
        parallel,
        defaults: options.defaults.clone(),
        default_max_tokens: options.default_max_tokens,
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
        http::serve(listener, routes::router(state), options.connections).await;
        Ok(())
    })
}

/// Refuses slots whose KV caches, all full, need more memory than the machine has (the
/// model's load checked one cache).
fn check_slots_fit(model: &dyn model::LanguageModel, parallel: usize) -> Result<()> {
    let one = model::cache_bytes(model.config(), model.context_size(), model.cache_type())?;
    let needed = one.saturating_mul(parallel as u64);
    if let Some(available) = crate::stats::available_memory_bytes() {
        if needed > available {
            anyhow::bail!(
                "{parallel} slots of {} tokens need {} of KV cache, more than the {} this \
                 machine has available: lower --parallel or --ctx-size",
                model.context_size(),
                crate::stats::human_bytes(needed),
                crate::stats::human_bytes(available)
            );
        }
    }
    Ok(())
}

/// The model's id in `/v1/models`: its file name without `.gguf`.
fn model_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into())
}
