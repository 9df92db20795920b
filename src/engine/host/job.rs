//! One request inside the engine host: what was asked, when, where its events go, and the one
//! test of whether it is still wanted (cancelled by its client, or its client gone).

use crate::protocol::{EngineEvent, GenerateRequest};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

pub struct Job {
    pub request: GenerateRequest,
    /// When the client asked: time to first token counts from here, queueing included.
    pub asked: Instant,
    /// Where this job's events go (the chat's one channel, or a server request's own).
    pub events: UnboundedSender<EngineEvent>,
    /// Set by the client to stop the job before its next prefill chunk or token.
    pub cancel: Arc<AtomicBool>,
}

impl Job {
    pub fn turn_id(&self) -> u64 {
        self.request.turn_id
    }

    /// Nobody wants the answer any more: its client cancelled it or went away (its receiver
    /// is dropped). Checked before every prefill chunk and every token.
    pub fn abandoned(&self) -> bool {
        self.cancel.load(Ordering::SeqCst) || self.events.is_closed()
    }

    /// Sends an event; a client that has gone notices nothing, and the job is then
    /// abandoned.
    pub fn emit(&self, event: EngineEvent) {
        let _ = self.events.send(event);
    }

    pub fn fail(&self, message: impl Into<String>) {
        self.emit(EngineEvent::Failed {
            turn_id: Some(self.turn_id()),
            message: message.into(),
        });
    }
}
