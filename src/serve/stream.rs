//! Streamed answers as server-sent events, OpenAI's way: a chunk per piece of text, a last
//! chunk with the finish reason, the usage chunk when asked for, then `[DONE]`. When the
//! client goes away the stream is dropped, and with it the job's receiver: the engine sees
//! the closed channel and frees the slot. Tool calls stream as `delta.tool_calls` by index:
//! the name first, then the arguments in pieces as the model writes them.

use super::error::ApiError;
use super::log::Pending;
use super::response::{self, Finish, Meta, ThinkingSplitter};
use crate::protocol::EngineEvent;
use crate::tools::parse::{CallStream, StreamDelta};
use crate::tools::ToolFormat;
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::convert::Infallible;
use tokio::sync::mpsc::UnboundedReceiver;

struct Streaming {
    events: UnboundedReceiver<EngineEvent>,
    meta: Meta,
    chat: bool,
    include_usage: bool,
    thinking: ThinkingSplitter,
    /// The answer's tool calls read as they come, when the request offered tools.
    calls: Option<CallStream>,
    /// Calls started so far.
    calls_made: usize,
    /// The request's log line, written when the answer ends (or the client goes away).
    log: Option<Pending>,
    /// Events ready to send, oldest first.
    ready: VecDeque<Event>,
    done: bool,
}

pub fn respond(
    meta: Meta,
    chat: bool,
    calls: Option<ToolFormat>,
    include_usage: bool,
    events: UnboundedReceiver<EngineEvent>,
    log: Option<Pending>,
) -> Response {
    let mut state = Streaming {
        events,
        meta,
        chat,
        include_usage,
        thinking: ThinkingSplitter::default(),
        // The tools' grammar holds every call from its marker on, so calls go out as written.
        calls: calls.map(CallStream::ahead),
        calls_made: 0,
        log,
        ready: VecDeque::new(),
        done: false,
    };
    if chat {
        let first = response::chat_chunk(
            &state.meta,
            json!({ "role": "assistant", "content": "" }),
            None,
        );
        state.ready.push_back(data(&first));
    }
    let stream = futures_util::stream::unfold(state, |mut state| async move {
        state
            .next()
            .await
            .map(|event| (Ok::<_, Infallible>(event), state))
    });
    Sse::new(stream).into_response()
}

fn data(value: &Value) -> Event {
    Event::default().data(value.to_string())
}

impl Streaming {
    /// The next event to send; None when the stream is over.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            match self.events.recv().await {
                Some(event) => self.on(event),
                None => {
                    let e = ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "the engine stopped before the answer was complete",
                    );
                    self.ready.push_back(data(&e.body()));
                    self.done = true;
                    self.logged(500, None);
                }
            }
        }
    }

    /// Turns one engine event into the events to send.
    fn on(&mut self, event: EngineEvent) {
        let meta = &self.meta;
        match event {
            EngineEvent::Token { text: piece, .. } if self.chat => {
                let (thinking, answer) = self.thinking.push(&piece);
                if !thinking.is_empty() {
                    let delta = json!({ "reasoning_content": thinking });
                    self.ready
                        .push_back(data(&response::chat_chunk(meta, delta, None)));
                }
                if !answer.is_empty() {
                    match self.calls.as_mut() {
                        Some(calls) => {
                            let deltas = calls.push(&answer);
                            self.send_deltas(deltas);
                        }
                        None => {
                            let delta = json!({ "content": answer });
                            self.ready
                                .push_back(data(&response::chat_chunk(meta, delta, None)));
                        }
                    }
                }
            }
            EngineEvent::Token { text: piece, .. } => {
                self.ready
                    .push_back(data(&response::text_chunk(meta, &piece, None)));
            }
            EngineEvent::Finished { usage, .. } => {
                if let Some(calls) = self.calls.take() {
                    self.send_deltas(calls.finish());
                }
                let meta = &self.meta;
                let finish = match Finish::of(&usage) {
                    Finish::Stop if self.calls_made > 0 => Finish::ToolCalls,
                    finish => finish,
                };
                let mut last = if self.chat {
                    response::chat_chunk(meta, json!({}), Some(finish))
                } else {
                    response::text_chunk(meta, "", Some(finish))
                };
                last["timings"] = response::timings(&usage);
                self.ready.push_back(data(&last));
                if self.include_usage {
                    let object = if self.chat {
                        "chat.completion.chunk"
                    } else {
                        "text_completion"
                    };
                    let chunk = response::usage_chunk(meta, object, &usage);
                    self.ready.push_back(data(&chunk));
                }
                self.ready.push_back(Event::default().data("[DONE]"));
                self.done = true;
                self.logged(200, Some(&usage));
            }
            EngineEvent::Failed { message, .. } => {
                let e = ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message);
                self.ready.push_back(data(&e.body()));
                self.done = true;
                self.logged(500, None);
            }
            EngineEvent::PromptProgress { .. }
            | EngineEvent::FirstToken { .. }
            | EngineEvent::Loaded { .. } => {}
        }
    }

    /// Writes the request's log line, once.
    fn logged(&mut self, status: u16, usage: Option<&crate::protocol::Usage>) {
        if let Some(log) = self.log.take() {
            log.done(status, usage);
        }
    }

    /// Sends what the call reader found: text as `content`, calls as `tool_calls` deltas.
    fn send_deltas(&mut self, deltas: Vec<StreamDelta>) {
        for delta in deltas {
            let delta = match delta {
                StreamDelta::Content(text) => json!({ "content": text }),
                StreamDelta::CallStart { index, name } => {
                    self.calls_made = self.calls_made.max(index + 1);
                    let mut call = response::tool_call(&self.meta, index, &name, "");
                    call["index"] = json!(index);
                    json!({ "tool_calls": [call] })
                }
                StreamDelta::Arguments { index, text } => json!({
                    "tool_calls": [{ "index": index, "function": { "arguments": text } }]
                }),
            };
            let chunk = response::chat_chunk(&self.meta, delta, None);
            self.ready.push_back(data(&chunk));
        }
    }
}

impl Drop for Streaming {
    /// A client that went away before the end still gets its line (status 499, nginx's
    /// "client closed request").
    fn drop(&mut self) {
        self.logged(499, None);
    }
}
