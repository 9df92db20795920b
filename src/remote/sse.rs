//! An incremental Server-Sent Events parser: bytes go in as they arrive, split anywhere (in
//! the middle of a line, of a `\r\n`, of a UTF-8 character), and whole events' `data` come out.
//! Comments (`: keep-alive`), `event:`/`id:`/`retry:` fields and blank keep-alive lines are
//! skipped; a line longer than the bound is an error rather than unbounded memory.

/// The longest line (and event) accepted; chat chunks are a few hundred bytes.
pub const MAX_LINE: usize = 1 << 20;

/// What a finished event carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field, when the server named the event (vLLM and OpenAI never do;
    /// some servers send `event: error`).
    pub name: Option<String>,
    /// The `data:` lines joined by `\n`.
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// The unfinished line so far (bytes: a character may be split between reads).
    line: Vec<u8>,
    /// The last byte fed was a `\r`: a `\n` right after it ends no second line.
    after_cr: bool,
    data: Option<String>,
    name: Option<String>,
}

impl SseParser {
    /// Feeds bytes; returns the events they complete, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, String> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.after_cr && b == b'\n' {
                self.after_cr = false;
                continue;
            }
            self.after_cr = b == b'\r';
            if b == b'\n' || b == b'\r' {
                let line = std::mem::take(&mut self.line);
                if let Some(event) = self.line_done(&line)? {
                    events.push(event);
                }
            } else {
                if self.line.len() >= MAX_LINE {
                    return Err(format!(
                        "a line of the stream is longer than {MAX_LINE} bytes"
                    ));
                }
                self.line.push(b);
            }
        }
        Ok(events)
    }

    fn line_done(&mut self, line: &[u8]) -> Result<Option<Event>, String> {
        if line.is_empty() {
            // A blank line dispatches the event, if it had data (else it is a keep-alive).
            let name = self.name.take();
            return Ok(self.data.take().map(|data| Event { name, data }));
        }
        let line = std::str::from_utf8(line).map_err(|_| "the stream is not UTF-8 text")?;
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                let len = self.data.as_ref().map_or(0, |d| d.len() + 1) + value.len();
                if len > MAX_LINE {
                    return Err(format!(
                        "an event of the stream is longer than {MAX_LINE} bytes"
                    ));
                }
                match &mut self.data {
                    // A second data line of the same event is joined with a newline.
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_string()),
                }
            }
            "event" => self.name = Some(value.to_string()),
            _ => {} // id, retry, and fields the spec says to ignore.
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &[u8] = b": hello\r\n\r\ndata: {\"a\":1}\r\n\r\n\ndata:x\ndata: y\n\nevent: error\nid: 3\ndata: \xc3\xa9\n\n: ping\n\ndata: [DONE]\n\n";

    fn expected() -> Vec<Event> {
        let e = |name: Option<&str>, data: &str| Event {
            name: name.map(str::to_string),
            data: data.to_string(),
        };
        vec![
            e(None, "{\"a\":1}"),
            e(None, "x\ny"),
            e(Some("error"), "\u{e9}"),
            e(None, "[DONE]"),
        ]
    }

    #[test]
    fn events_come_out_whole_whatever_the_read_sizes() {
        assert_eq!(SseParser::default().feed(STREAM).unwrap(), expected());
        // Every split point, including inside \r\n and inside the two bytes of é.
        for at in 0..=STREAM.len() {
            let mut p = SseParser::default();
            let mut got = p.feed(&STREAM[..at]).unwrap();
            got.extend(p.feed(&STREAM[at..]).unwrap());
            assert_eq!(got, expected(), "split at {at}");
        }
        let mut p = SseParser::default();
        let got: Vec<Event> = STREAM
            .iter()
            .flat_map(|b| p.feed(std::slice::from_ref(b)).unwrap())
            .collect();
        assert_eq!(got, expected(), "a byte at a time");
    }

    #[test]
    fn bare_carriage_returns_end_lines_too() {
        let got = SseParser::default()
            .feed(b"data: a\r\rdata: b\r\r")
            .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].data, "b");
    }

    #[test]
    fn an_endless_line_is_refused_not_buffered() {
        let mut p = SseParser::default();
        let chunk = vec![b'x'; 64 * 1024];
        let mut failed = None;
        for _ in 0..(MAX_LINE / chunk.len() + 2) {
            if let Err(e) = p.feed(&chunk) {
                failed = Some(e);
                break;
            }
        }
        assert!(failed.unwrap().contains("longer than"));
        assert!(SseParser::default().feed(b"data: \xff\n\n").is_err());
    }
}
