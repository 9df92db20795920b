//! One chat turn against a remote: the request and its Server-Sent Events are read on a
//! thread of their own, so the engine thread can stop at once (Esc) and notice a stall (no
//! byte for the remote's `stall` time) whatever the network does. Stopping drops the
//! receiving end; the reading thread then drops the response at its next read, which closes
//! the connection, and the server stops generating.

use super::chunk::{self, CallPiece, Chunk};
use super::http::{agent, failure, redirect_check, request};
use super::sse::SseParser;
use super::RemoteTarget;
use crate::chat::ToolCall;
use crate::protocol::{GenerateRequest, Prompt, ServerFigures, StopReason, TurnObserver, Usage};
use crate::stats::secs;
use anyhow::{anyhow, bail, Result};
use std::io::Read;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

/// How often the engine thread looks at the stop flag while no bytes arrive.
const POLL: Duration = Duration::from_millis(20);
/// No answer is longer than this; a server that goes on is cut off.
pub const MAX_ANSWER_BYTES: usize = 8 << 20;
/// Bytes asked of the socket at a time: small reads hand each token on as it arrives.
const READ_PIECE: usize = 16 * 1024;

/// What the reading thread hands over.
enum Arrival {
    Bytes(Vec<u8>),
    End,
    Failed(String),
}

/// The turn as it arrives.
struct Turn<'a> {
    target: &'a RemoteTarget,
    observer: &'a mut dyn TurnObserver,
    asked: Instant,
    in_thinking: bool,
    pieces: usize,
    bytes: usize,
    first_at: Option<Instant>,
    last_at: Option<Instant>,
    finish_reason: Option<String>,
    reported: Option<ServerFigures>,
    done: bool,
    max_pieces: usize,
    /// The tool calls so far, by index.
    calls: Vec<ToolCall>,
}

/// A remote's answer: its figures, and the tools it called.
pub struct Answer {
    pub usage: Usage,
    pub tool_calls: Vec<ToolCall>,
}

/// Runs the turn; tokens go to `observer` as they arrive. An error is one sentence, and
/// the text already passed on stays with the client.
pub fn run(
    target: &RemoteTarget,
    request: &GenerateRequest,
    context_size: usize,
    asked: Instant,
    observer: &mut dyn TurnObserver,
) -> Result<Answer> {
    let messages = match &request.prompt {
        Prompt::Conversation(messages) => messages,
        Prompt::Raw(_) => {
            bail!("--raw sends text without a chat template, which only local models can do")
        }
        Prompt::Tokens(_) => bail!("a remote model takes a conversation, not token ids"),
        // The OpenAI API has no way to say "go on with this answer".
        Prompt::Continue(_) => bail!("a remote model cannot go on with an answer cut short"),
    };
    let mut body = super::request::body(
        &target.model,
        messages,
        &request.sampling,
        request.max_tokens,
    );
    super::request::add_tools(&mut body, request.tools.as_ref());
    super::request::add_constraint(&mut body, request.constraint.as_ref())?;
    let arrivals = spawn_reader(target.clone(), body.to_string())?;
    let mut turn = Turn {
        target,
        observer,
        asked,
        in_thinking: false,
        pieces: 0,
        bytes: 0,
        first_at: None,
        last_at: None,
        finish_reason: None,
        reported: None,
        done: false,
        max_pieces: request.max_tokens.saturating_mul(2).saturating_add(64),
        calls: Vec::new(),
    };
    let stop = turn.read(&arrivals)?;
    drop(arrivals);
    Ok(Answer {
        usage: turn.usage(stop, context_size),
        tool_calls: std::mem::take(&mut turn.calls),
    })
}

fn spawn_reader(target: RemoteTarget, body: String) -> Result<Receiver<Arrival>> {
    let (tx, rx) = sync_channel(256);
    std::thread::Builder::new()
        .name("taper-remote-stream".into())
        .spawn(move || read_stream(&target, &body, &tx))
        .map_err(|e| anyhow!("cannot start reading the answer: {e}"))?;
    Ok(rx)
}

/// The reading thread: the request, then the body in pieces, until the end, an error, or
/// the engine thread stops listening.
fn read_stream(target: &RemoteTarget, body: &str, tx: &SyncSender<Arrival>) {
    let remote = &target.remote;
    // A little past the stall time, so the engine thread's own check speaks first.
    let agent = agent(remote.stall + Duration::from_secs(5));
    let url = format!("{}/chat/completions", remote.base_url);
    let sent = request(&agent, "POST", remote, &url)
        .set("Content-Type", "application/json")
        .set("Accept", "text/event-stream")
        .send_string(body);
    let response = match sent.map_err(|e| failure(remote, e, Some(&target.model))) {
        Ok(r) => redirect_check(remote, r),
        Err(e) => Err(e),
    };
    let response = match response {
        Ok(r) => r,
        Err(sentence) => {
            let _ = tx.send(Arrival::Failed(sentence));
            return;
        }
    };
    let mut reader = response.into_reader();
    let mut buf = vec![0u8; READ_PIECE];
    loop {
        let arrival = match reader.read(&mut buf) {
            Ok(0) => Arrival::End,
            Ok(n) => Arrival::Bytes(buf[..n].to_vec()),
            Err(e) => Arrival::Failed(format!(
                "{} broke off the answer ({})",
                remote.name,
                why(&e)
            )),
        };
        let last = !matches!(arrival, Arrival::Bytes(_));
        if tx.send(arrival).is_err() || last {
            return;
        }
    }
}

/// Why a read of the answer failed, in words: a connection that closed mid-answer shows up as
/// the HTTP library's chunk decoder failing, which says nothing to a user.
fn why(e: &std::io::Error) -> String {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, InvalidData, UnexpectedEof};
    let closed = matches!(
        e.kind(),
        UnexpectedEof | ConnectionReset | ConnectionAborted | InvalidData
    ) || e.to_string().contains("chunk");
    if closed {
        "the connection closed before the answer was complete".into()
    } else {
        chunk::one_line(&e.to_string(), 120)
    }
}

impl Turn<'_> {
    /// Reads until `[DONE]` or a stop; an early end, a stall or bad data is an error.
    fn read(&mut self, arrivals: &Receiver<Arrival>) -> Result<StopReason> {
        let name = self.target.remote.name.clone();
        let stall = self.target.remote.stall;
        let mut parser = SseParser::default();
        let mut last_byte = Instant::now();
        loop {
            if self.observer.stop_requested() {
                self.close_thinking()?;
                return Ok(StopReason::Cancelled);
            }
            match arrivals.recv_timeout(POLL) {
                Ok(Arrival::Bytes(bytes)) => {
                    last_byte = Instant::now();
                    let events = parser.feed(&bytes).map_err(|e| anyhow!("{name}: {e}"))?;
                    for event in events {
                        self.event(event.name.as_deref(), &event.data)?;
                        if self.done {
                            self.close_thinking()?;
                            return Ok(self.stop_reason());
                        }
                    }
                }
                Ok(Arrival::End) => bail!(
                    "{name} ended the answer early: the stream closed without [DONE] (the \
                     server may have stopped or crashed)"
                ),
                Ok(Arrival::Failed(sentence)) => bail!("{sentence}"),
                Err(RecvTimeoutError::Timeout) if last_byte.elapsed() >= stall => bail!(
                    "{name} sent nothing for {} s: the answer stalled (stall_timeout_s sets \
                     how long to wait)",
                    stall.as_secs()
                ),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => bail!("{name}: the answer stopped arriving"),
            }
        }
    }

    fn event(&mut self, name: Option<&str>, data: &str) -> Result<()> {
        let remote = &self.target.remote.name;
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk = chunk::parse(data).map_err(|e| anyhow!("{remote}: {e}"))?;
        if let Some(message) = &chunk.error {
            bail!("{remote} reported an error: {message}");
        }
        if name == Some("error") {
            bail!("{remote} reported an error: {}", chunk::one_line(data, 300));
        }
        self.chunk(chunk)
    }

    fn chunk(&mut self, chunk: Chunk) -> Result<()> {
        if let Some(r) = chunk.reported {
            self.reported = Some(r);
        }
        if chunk.finish_reason.is_some() {
            self.finish_reason = chunk.finish_reason;
        }
        if let Some(thinking) = chunk.reasoning {
            // Thinking arrives in a field of its own; the chat shows `<think>` text folded.
            if !self.in_thinking {
                self.in_thinking = true;
                self.observer.text("<think>")?;
            }
            self.piece(&thinking)?;
        }
        if let Some(content) = chunk.content {
            self.close_thinking()?;
            self.piece(&content)?;
        }
        for piece in chunk.calls {
            self.call_piece(piece)?;
        }
        Ok(())
    }

    /// A piece of a tool call joins the call of its index (a new index starts a call).
    fn call_piece(&mut self, piece: CallPiece) -> Result<()> {
        const MAX_CALLS: usize = 128;
        let remote = &self.target.remote.name;
        if piece.index >= MAX_CALLS {
            bail!(
                "{remote} sent a tool call numbered {}: stopped reading",
                piece.index
            );
        }
        self.count_bytes(piece.arguments.as_ref().map_or(0, String::len))?;
        while self.calls.len() <= piece.index {
            let n = self.calls.len();
            self.calls.push(ToolCall {
                id: format!("call_remote_{n}"),
                name: String::new(),
                arguments: String::new(),
            });
        }
        let call = &mut self.calls[piece.index];
        if let Some(id) = piece.id {
            call.id = id;
        }
        if let Some(name) = piece.name {
            call.name.push_str(&name);
        }
        if let Some(arguments) = piece.arguments {
            call.arguments.push_str(&arguments);
        }
        let now = Instant::now();
        self.first_at.get_or_insert(now);
        self.last_at = Some(now);
        Ok(())
    }

    fn piece(&mut self, text: &str) -> Result<()> {
        let now = Instant::now();
        self.first_at.get_or_insert(now);
        self.last_at = Some(now);
        self.pieces += 1;
        self.count_bytes(text.len())?;
        let remote = &self.target.remote.name;
        if self.pieces > self.max_pieces {
            bail!("{remote} went on far past max_tokens: stopped reading the answer");
        }
        self.observer.text(text)
    }

    /// `n` more bytes of answer (text or call arguments); past [`MAX_ANSWER_BYTES`] the
    /// answer is cut off.
    fn count_bytes(&mut self, n: usize) -> Result<()> {
        self.bytes += n;
        if self.bytes > MAX_ANSWER_BYTES {
            bail!(
                "{} sent an answer over {} MiB: stopped reading it",
                self.target.remote.name,
                MAX_ANSWER_BYTES >> 20
            );
        }
        Ok(())
    }

    fn close_thinking(&mut self) -> Result<()> {
        if self.in_thinking {
            self.in_thinking = false;
            self.observer.text("</think>\n\n")?;
        }
        Ok(())
    }

    fn stop_reason(&self) -> StopReason {
        match self.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            _ => StopReason::EndOfTurn,
        }
    }

    /// The turn's figures: times measured here, on arrival; token counts and rates the
    /// server reported kept apart, as the server's.
    fn usage(&self, stop: StopReason, context_size: usize) -> Usage {
        let ttft_s = self.first_at.map_or(0.0, |f| secs(f - self.asked));
        let decode_s = match (self.first_at, self.last_at) {
            (Some(f), Some(l)) => secs(l - f),
            _ => 0.0,
        };
        let r = self.reported.clone();
        Usage {
            prompt_tokens: r.as_ref().and_then(|r| r.prompt_tokens).unwrap_or(0),
            cached_tokens: r.as_ref().and_then(|r| r.cached_tokens).unwrap_or(0),
            // Here the prompt's time cannot be told from the network's: until the first token.
            prefill_s: ttft_s,
            ttft_s,
            generated_tokens: self.pieces,
            decode_s,
            dropped_messages: 0,
            context_size,
            stop: Some(stop),
            server: r.map(Box::new),
            ..Usage::default()
        }
    }
}
