//! What the HTTP side hands the engine thread (a [`Job`]) and what it hears back
//! ([`JobEvent`]s on the job's own channel). A closed channel means the client has gone: the
//! engine stops that job and frees its slot.

use crate::engine::generation::TurnOptions;
use crate::stats::Usage;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

/// One request, its prompt already templated and tokenized.
pub struct Job {
    pub prompt: Vec<u32>,
    pub options: TurnOptions,
    /// The answer ends before the first of these.
    pub stop: Vec<String>,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
    /// Remember the answer's ids for the next turn of its conversation (chat requests).
    pub remember_answer: bool,
    /// When the request arrived: time to first token counts from here, queueing included.
    pub asked: Instant,
    pub events: UnboundedSender<JobEvent>,
}

/// Why an answer ended, in OpenAI's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// An end-of-turn token or a stop string.
    Stop,
    /// `max_tokens`, or the context is full.
    Length,
}

impl Finish {
    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum JobEvent {
    /// More answer text.
    Text(String),
    Done {
        usage: Usage,
        finish: Finish,
    },
    /// The engine could not answer; one sentence for the client.
    Failed(String),
}
