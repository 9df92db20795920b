//! The HTTP routes: `/health`, `/v1/models`, `/v1/chat/completions`, `/v1/completions`, and
//! llama-server's `/apply-template` (the prompt a chat request would be given).
//! A request is read (bounded in size and time), checked, templated and tokenized here, then
//! queued for the engine thread; a full queue is a 503 with `Retry-After`.

use super::error::ApiError;
use super::log::{LoggedLater, Pending};
use super::models::Served;
use super::request::{self, Completion, Limits, Prompt};
use super::response::{self, Finish, Meta};
use super::roster::Roster;
use super::stream;
use crate::engine::Refused;
use crate::protocol::{
    self, EngineEvent, GenerateRequest, SamplingParams, Speculation, ToolChoice, Usage,
};
use crate::tools::ToolFormat;
use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// Everything a request handler shares.
pub struct AppState {
    /// The models served, loaded or loaded on demand; the first answers requests that name
    /// none.
    pub roster: Arc<Roster>,
    /// Requests waiting for a slot at most, per model; more get a 503.
    pub queue: usize,
    /// Slots per model.
    pub parallel: usize,
    pub defaults: SamplingParams,
    pub default_max_tokens: usize,
    /// Whether answers are decoded speculatively (`--speculative`).
    pub speculation: Speculation,
    pub limits: Limits,
    pub api_key: Option<String>,
    /// A request body must arrive within this.
    pub body_timeout: Duration,
    pub next_id: AtomicU64,
}

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/apply-template", post(apply_template))
        .fallback(not_found)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state)
}

/// The slots of the models loaded now.
async fn health(State(s): State<Arc<AppState>>) -> Response {
    let (mut loaded, mut busy, mut queued) = (0, 0, 0);
    s.roster.for_each_loaded(|status| {
        loaded += 1;
        busy += status.busy.load(Ordering::SeqCst);
        queued += status.queued.load(Ordering::SeqCst);
    });
    let body = json!({
        "status": "ok",
        "slots_idle": (s.parallel * loaded).saturating_sub(busy),
        "slots_processing": busy,
        "requests_queued": queued,
        "models_loaded": loaded,
    });
    super::json_response(StatusCode::OK, &body)
}

async fn models(State(s): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Err(e) = s.authorize(&headers) {
        return e.into_response();
    }
    let data: Vec<_> = s
        .roster
        .models
        .iter()
        .map(|m| {
            json!({
                "id": m.name,
                "object": "model",
                "created": now_secs(),
                "owned_by": "taper",
                "meta": {
                    "n_ctx": m.footprint.context,
                    "n_parallel": s.parallel,
                    "loaded": m.is_loaded(),
                },
            })
        })
        .collect();
    super::json_response(StatusCode::OK, &json!({ "object": "list", "data": data }))
}

/// A known path asked with a method it does not take: a JSON error like every other.
async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    let allowed = match uri.path() {
        "/health" | "/v1/models" => "GET",
        _ => "POST",
    };
    let mut response = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} takes {allowed}, not {method}", uri.path()),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static(allowed));
    response
}

async fn not_found() -> Response {
    ApiError::new(StatusCode::NOT_FOUND, "no such endpoint").into_response()
}

async fn chat(
    State(s): State<Arc<AppState>>,
    log: Option<Extension<Pending>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    answer(s, headers, body, true, log.map(|Extension(p)| p))
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn completions(
    State(s): State<Arc<AppState>>,
    log: Option<Extension<Pending>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    answer(s, headers, body, false, log.map(|Extension(p)| p))
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// The prompt text a chat request renders to, without answering it (for debugging templates).
async fn apply_template(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let rendered = async {
        s.authorize(&headers)?;
        let bytes = read_body(&s, &headers, body).await?;
        let request = request::parse(&bytes, true, &s.defaults, &s.limits)?;
        let Prompt::Chat(messages) = request.prompt else {
            return Err(ApiError::field("messages", "`messages` is required"));
        };
        let model = s.ready(request.model.as_deref()).await?;
        tokio::task::spawn_blocking(move || {
            model
                .text
                .render(&messages, request.tools.as_ref())
                .map(|(text, _)| text)
                .map_err(|e| ApiError::field("messages", format!("{e:#}")))
        })
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "rendering failed"))?
    };
    match rendered.await {
        Ok(prompt) => super::json_response(StatusCode::OK, &json!({ "prompt": prompt })),
        Err(e) => e.into_response(),
    }
}

/// A chat or completions request, from its body to its response.
async fn answer(
    s: Arc<AppState>,
    headers: HeaderMap,
    body: Body,
    chat: bool,
    log: Option<Pending>,
) -> Result<Response, ApiError> {
    let asked = Instant::now();
    s.authorize(&headers)?;
    let bytes = read_body(&s, &headers, body).await?;
    let request = request::parse(&bytes, chat, &s.defaults, &s.limits)?;
    let model = s.ready(request.model.as_deref()).await?;
    let (prompt, tools) = (request.prompt.clone(), request.tools.clone());
    let constraint = request.constraint.clone();
    // Templating, tokenizing and compiling a grammar are CPU work: off the connection threads.
    let picked = model.clone();
    let tokens = tokio::task::spawn_blocking(move || {
        if let Some((field, constraint)) = &constraint {
            picked.check_constraint(field, constraint)?;
        }
        if let Some(constraint) = tools.as_ref().and_then(|t| picked.text.tool_constraint(t)) {
            picked.check_constraint("tools", &constraint)?;
        }
        picked.prompt_ids(&prompt, tools.as_ref())
    })
    .await
    .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "tokenizing failed"))??;
    let (events, meta) = s.queue(&model, tokens, &request, chat, asked)?;
    // The answer is read back in the tools' syntax when calls are allowed, and always in the
    // generic form (its replies are JSON even when no call is).
    let format = model.text.template.tool_format();
    let calls = request
        .tools
        .as_ref()
        .filter(|t| t.choice != ToolChoice::None || format == ToolFormat::Generic)
        .map(|_| format);
    // From here the answer's end writes the log line, with its token counts.
    let mut response = if request.stream {
        let include_usage = request.include_usage;
        stream::respond(meta, chat, calls, include_usage, events, log)
    } else {
        let response = collect(meta, chat, calls, events).await;
        if let Some(log) = &log {
            let status = match &response {
                Ok(_) => 200,
                Err(e) => e.status.as_u16(),
            };
            log.done(status, response.as_ref().ok().map(|(_, usage)| usage));
        }
        response.map(|(response, _)| response)?
    };
    response.extensions_mut().insert(LoggedLater);
    Ok(response)
}

impl AppState {
    /// The model a request names, loaded (see [`Roster::ready`]).
    async fn ready(&self, asked: Option<&str>) -> Result<Arc<Served>, ApiError> {
        let index = self.roster.pick(asked)?;
        self.roster.ready(index).await
    }

    /// Without a configured key everyone may; with one, only a matching bearer token.
    fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(key) = &self.api_key else {
            return Ok(());
        };
        let given = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
        if super::auth::authorized(given, key) {
            Ok(())
        } else {
            Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "a valid API key is required (Authorization: Bearer KEY)",
            ))
        }
    }

    /// Hands the request to the engine; a full queue is a 503.
    fn queue(
        &self,
        model: &Served,
        prompt: Vec<u32>,
        request: &Completion,
        chat: bool,
        asked: Instant,
    ) -> Result<(UnboundedReceiver<EngineEvent>, Meta), ApiError> {
        let room = model.context - prompt.len();
        let max_tokens = request
            .max_tokens
            .unwrap_or(self.default_max_tokens)
            .min(room)
            .min(self.limits.max_tokens);
        let (events, receiver) = unbounded_channel();
        let n = self.next_id.fetch_add(1, Ordering::SeqCst);
        let job = GenerateRequest {
            turn_id: n,
            prompt: protocol::Prompt::Tokens(prompt),
            sampling: SamplingParams {
                frequency_penalty: request.frequency_penalty,
                presence_penalty: request.presence_penalty,
                ..request.sampling.clone()
            },
            max_tokens,
            stop: request.stop.clone(),
            remember_answer: chat,
            constraint: request.constraint.clone().map(|(_, c)| c),
            tools: request.tools.clone(),
            prose_only: false,
            speculation: self.speculation,
        };
        model
            .engine
            .submit(job, asked, events, self.queue)
            .map_err(|refused| match refused {
                Refused::QueueFull => ApiError::busy(),
                Refused::Stopped => {
                    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped")
                }
            })?;
        let meta = Meta {
            id: format!("{}-{n}", if chat { "chatcmpl" } else { "cmpl" }),
            model: model.name.clone(),
            created: now_secs(),
        };
        Ok((receiver, meta))
    }
}

/// The body, refused early when its declared length is over the limit, and in time.
async fn read_body(s: &AppState, headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let max = s.limits.max_body_bytes;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is larger than {max} bytes"),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(s.body_timeout, axum::body::to_bytes(body, max)).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "the request body did not arrive in time",
        )),
        Ok(Err(_)) => Err(too_large()),
        Ok(Ok(bytes)) => Ok(bytes),
    }
}

/// A whole (non-streamed) answer.
async fn collect(
    meta: Meta,
    chat: bool,
    calls: Option<ToolFormat>,
    mut events: UnboundedReceiver<EngineEvent>,
) -> Result<(Response, Usage), ApiError> {
    let mut text = String::new();
    while let Some(event) = events.recv().await {
        match event {
            EngineEvent::Token { text: piece, .. } => text.push_str(&piece),
            EngineEvent::Finished { usage, .. } => {
                let finish = Finish::of(&usage);
                let body = if chat {
                    response::chat(&meta, &text, calls, finish, &usage)
                } else {
                    response::text(&meta, &text, finish, &usage)
                };
                return Ok((super::json_response(StatusCode::OK, &body), usage));
            }
            EngineEvent::Failed { message, .. } => {
                return Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message))
            }
            EngineEvent::PromptProgress { .. }
            | EngineEvent::FirstToken { .. }
            | EngineEvent::Loaded { .. } => {}
        }
    }
    Err(ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the engine stopped before the answer was complete",
    ))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
