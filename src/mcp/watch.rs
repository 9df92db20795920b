//! Watches a stdio server's stdout on its way to rmcp's reader, for two things rmcp handles
//! quietly. A line over `MAX_MESSAGE_BYTES` is dropped by rmcp without a word (its memory
//! stays bounded), which would leave the call it answers waiting for its time limit: the
//! watcher reports the oversized message's request id (read from the line's start) so that
//! call ends at once. A line that is not JSON is skipped by rmcp: the watcher notes it in the
//! server's log, where a user looking for a misbehaving server will look.

use super::log::ServerLog;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::broadcast;

/// The longest message taper reads from a stdio server: rmcp's own default line limit (the
/// same as its Streamable HTTP client's), named here so the watcher agrees with it.
pub const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How much of a line's start is kept: enough for `{"jsonrpc":"2.0","id":…` and a note.
const PREFIX: usize = 200;

/// Which request an oversized message answered, when its start says (`"id":7`).
pub type Oversized = Option<String>;

pub struct Watched<R> {
    inner: R,
    line_len: usize,
    prefix: Vec<u8>,
    reported: bool,
    log: ServerLog,
    oversized: broadcast::Sender<Oversized>,
}

impl<R> Watched<R> {
    pub fn new(inner: R, log: ServerLog, oversized: broadcast::Sender<Oversized>) -> Self {
        Self {
            inner,
            line_len: 0,
            prefix: Vec::new(),
            reported: false,
            log,
            oversized,
        }
    }

    fn observe(&mut self, mut bytes: &[u8]) {
        while let Some(i) = bytes.iter().position(|&b| b == b'\n') {
            self.extend(&bytes[..i]);
            self.end_line();
            bytes = &bytes[i + 1..];
        }
        self.extend(bytes);
    }

    fn extend(&mut self, part: &[u8]) {
        let room = PREFIX.saturating_sub(self.prefix.len());
        self.prefix.extend_from_slice(&part[..part.len().min(room)]);
        self.line_len += part.len();
        if self.line_len > MAX_MESSAGE_BYTES && !self.reported {
            self.reported = true;
            let id = request_id(&String::from_utf8_lossy(&self.prefix));
            self.log.note(&format!(
                "a message of more than {} MiB on stdout was dropped (request id {})",
                MAX_MESSAGE_BYTES >> 20,
                id.as_deref().unwrap_or("unknown")
            ));
            // No receiver means no call is waiting: nothing to tell.
            let _ = self.oversized.send(id);
        }
    }

    fn end_line(&mut self) {
        let line = String::from_utf8_lossy(&self.prefix);
        let line = line.trim();
        if !self.reported && !line.is_empty() && !line.starts_with('{') {
            self.log
                .note(&format!("stdout line that is not a message: {line}"));
        }
        self.prefix.clear();
        self.line_len = 0;
        self.reported = false;
    }
}

/// The top-level `"id"` of a JSON-RPC message from its first bytes, as rmcp prints ids
/// (a number as is, a string in quotes).
fn request_id(start: &str) -> Option<String> {
    let after = &start[start.find("\"id\"")? + 4..];
    let value = after.trim_start().strip_prefix(':')?.trim_start();
    if let Some(quoted) = value.strip_prefix('"') {
        return Some(quoted[..quoted.find('"')?].to_string());
    }
    let digits: String = value
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    (!digits.is_empty()).then_some(digits)
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.observe(&buf.filled()[before..]);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::request_id;

    #[test]
    fn the_request_id_is_read_from_a_message_start() {
        assert_eq!(
            request_id(r#"{"jsonrpc":"2.0","id":17,"result":{"#).as_deref(),
            Some("17")
        );
        assert_eq!(
            request_id(r#"{"id": "a-1", "jsonrpc""#).as_deref(),
            Some("a-1")
        );
        assert_eq!(request_id(r#"{"jsonrpc":"2.0","result":"#), None);
    }
}
