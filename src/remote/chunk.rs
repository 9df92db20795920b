//! One event of a streamed chat completion, read leniently: every server fills the OpenAI
//! chunk a little differently (thinking as `reasoning_content` in llama-server, vLLM and
//! SGLang, `reasoning` in Ollama and newer vLLM; usage in a last chunk with no choices;
//! llama-server's own `timings`), an `error` object can arrive mid-stream, and tool calls come
//! as `delta.tool_calls` pieces by index.

use crate::protocol::ServerFigures;
use serde_json::Value;

/// A chunk's meaning.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chunk {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    /// `stop`, `length`, ... when the answer ended.
    pub finish_reason: Option<String>,
    /// Usage and timings, when this chunk carries them.
    pub reported: Option<ServerFigures>,
    /// The server's error message, when the event is an error.
    pub error: Option<String>,
    /// Pieces of tool calls.
    pub calls: Vec<CallPiece>,
}

/// A piece of the `index`th tool call: its id and name come once, its arguments in pieces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallPiece {
    pub index: usize,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: Option<String>,
}

fn text(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
}

fn count(v: &Value) -> Option<usize> {
    v.as_u64().and_then(|n| usize::try_from(n).ok())
}

fn positive(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite() && *x > 0.0)
}

/// Reads one event's data; malformed JSON is an error sentence with the start of the data.
pub fn parse(data: &str) -> Result<Chunk, String> {
    let v: Value = serde_json::from_str(data).map_err(|e| {
        let start: String = data.chars().take(60).collect();
        format!("a chunk of the stream is not valid JSON ({e}): {start:?}")
    })?;
    if !v.is_object() {
        return Err("a chunk of the stream is not a JSON object".into());
    }
    let mut chunk = Chunk {
        error: error_message(&v),
        ..Chunk::default()
    };
    if let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) {
        let delta = &choice["delta"];
        chunk.content = text(&delta["content"]);
        chunk.reasoning = text(&delta["reasoning_content"]).or_else(|| text(&delta["reasoning"]));
        chunk.finish_reason = text(&choice["finish_reason"]);
        if let Some(calls) = delta["tool_calls"].as_array() {
            chunk.calls = calls
                .iter()
                .enumerate()
                .map(|(i, c)| CallPiece {
                    index: count(&c["index"]).unwrap_or(i),
                    id: text(&c["id"]),
                    name: text(&c["function"]["name"]),
                    arguments: text(&c["function"]["arguments"]),
                })
                .collect();
        }
    }
    chunk.reported = reported(&v);
    Ok(chunk)
}

/// `{"error": {"message": ...}}`, `{"error": "..."}` or `{"message": ..., "code": 4xx}`.
pub fn error_message(v: &Value) -> Option<String> {
    let e = &v["error"];
    let message = text(&e["message"]).or_else(|| text(e)).or_else(|| {
        (v.get("choices").is_none() && v.get("object").is_none())
            .then(|| text(&v["message"]))
            .flatten()
    })?;
    Some(one_line(&message, 300))
}

/// Server text for a sentence: one line, control characters dropped, at most `max` chars.
pub fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let words: Vec<&str> = flat.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.chars().count() > max {
        let cut: String = joined.chars().take(max).collect();
        format!("{cut}…")
    } else {
        joined
    }
}

fn reported(v: &Value) -> Option<ServerFigures> {
    let (usage, timings) = (&v["usage"], &v["timings"]);
    if !usage.is_object() && !timings.is_object() {
        return None;
    }
    Some(ServerFigures {
        prompt_tokens: count(&usage["prompt_tokens"]).or_else(|| count(&timings["prompt_n"])),
        completion_tokens: count(&usage["completion_tokens"])
            .or_else(|| count(&timings["predicted_n"])),
        cached_tokens: count(&timings["cache_n"])
            .or_else(|| count(&usage["prompt_tokens_details"]["cached_tokens"])),
        prompt_tok_s: positive(&timings["prompt_per_second"]),
        decode_tok_s: positive(&timings["predicted_per_second"]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_and_each_kind_of_thinking_are_read() {
        let c = parse(r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#)
            .unwrap();
        assert_eq!((c.content.as_deref(), c.reasoning), (Some("Hi"), None));
        // llama-server, vLLM (older) and SGLang.
        let c = parse(r#"{"choices":[{"delta":{"reasoning_content":"hmm","content":null}}]}"#);
        assert_eq!(c.unwrap().reasoning.as_deref(), Some("hmm"));
        // Ollama and newer vLLM.
        let c = parse(r#"{"choices":[{"delta":{"role":"assistant","reasoning":"so"}}]}"#);
        assert_eq!(c.unwrap().reasoning.as_deref(), Some("so"));
        let c = parse(r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#).unwrap();
        assert_eq!(c.finish_reason.as_deref(), Some("length"));
        assert_eq!(c.reported, None);
    }

    #[test]
    fn tool_call_pieces_are_read_by_index() {
        let c = parse(
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_9","type":"function",
            "function":{"name":"get_weather","arguments":""}}]}}]}"#,
        )
        .unwrap();
        assert_eq!(
            c.calls,
            [CallPiece {
                index: 1,
                id: Some("call_9".into()),
                name: Some("get_weather".into()),
                arguments: None,
            }]
        );
        let c = parse(r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"ci"}}]}}]}"#)
            .unwrap();
        assert_eq!(c.calls[0].arguments.as_deref(), Some("{\"ci"));
    }

    #[test]
    fn usage_and_llama_server_timings_are_reported() {
        let c = parse(
            r#"{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29},
            "timings":{"cache_n":12,"prompt_n":8,"prompt_per_second":250.5,"predicted_n":9,
            "predicted_per_second":61.25}}"#,
        )
        .unwrap();
        let r = c.reported.unwrap();
        assert_eq!(
            (r.prompt_tokens, r.completion_tokens, r.cached_tokens),
            (Some(20), Some(9), Some(12))
        );
        assert_eq!((r.prompt_tok_s, r.decode_tok_s), (Some(250.5), Some(61.25)));
        // vLLM: usage only, cached tokens in the details.
        let c = parse(
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}"#,
        );
        let r = c.unwrap().reported.unwrap();
        assert_eq!((r.cached_tokens, r.decode_tok_s), (Some(4), None));
    }

    #[test]
    fn errors_and_garbage_become_sentences() {
        let c = parse(r#"{"error":{"message":"context\nfull","code":400}}"#).unwrap();
        assert_eq!(c.error.as_deref(), Some("context full"));
        assert_eq!(
            parse(r#"{"error":"boom"}"#).unwrap().error.as_deref(),
            Some("boom")
        );
        let e = parse(r#"{"choices":[{"delta":{"content":"a"#).unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
        assert!(parse("[1,2]").is_err());
        assert!(one_line(&"x".repeat(500), 10).ends_with('…'));
    }
}
