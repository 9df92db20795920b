//! A tool's result as text for the model: text parts joined with newlines, structured content
//! as compact JSON when there is no text, images, audio and blobs described in one line (a
//! small model cannot read them), and the whole cut to `max_result_chars`.

use super::types::ToolResult;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use std::time::Duration;

/// The model's text of `result`, bounded to `max_chars` characters.
pub fn to_tool_result(result: &CallToolResult, max_chars: usize, elapsed: Duration) -> ToolResult {
    let mut parts: Vec<String> = Vec::new();
    let mut has_text = false;
    for block in &result.content {
        let (part, is_text) = describe(block);
        has_text |= is_text;
        parts.push(part);
    }
    if !has_text {
        if let Some(structured) = &result.structured_content {
            parts.push(structured.to_string());
        }
    }
    let text = if parts.is_empty() {
        "(the tool returned nothing)".to_string()
    } else {
        parts.join("\n")
    };
    let (text, note) = bound(text, max_chars);
    ToolResult {
        text,
        is_error: result.is_error.unwrap_or(false),
        note,
        elapsed,
    }
}

/// One content block as text; true when it is text the tool meant to be read.
fn describe(block: &ContentBlock) -> (String, bool) {
    match block {
        ContentBlock::Text(t) => (t.text.clone(), true),
        ContentBlock::Image(i) => (unseen("image", &i.mime_type, &i.data), false),
        ContentBlock::Audio(a) => (unseen("audio", &a.mime_type, &a.data), false),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { text, .. } => (text.clone(), true),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => {
                let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                (unseen(&format!("resource {uri}"), mime, blob), false)
            }
            _ => (
                "[a resource of a kind taper does not know]".to_string(),
                false,
            ),
        },
        ContentBlock::ResourceLink(link) => (format!("[link {}: {}]", link.name, link.uri), true),
        // A kind newer than this build: say so rather than drop it silently.
        _ => (
            "[a content part of a kind taper does not know]".to_string(),
            false,
        ),
    }
}

/// `[image image/png, 12 KB: not shown to the model]`, the size decoded from base64's length.
fn unseen(kind: &str, mime: &str, base64: &str) -> String {
    let bytes = base64.trim_end_matches('=').len() * 3 / 4;
    format!("[{kind} {mime}, {}: not shown to the model]", size(bytes))
}

fn size(bytes: usize) -> String {
    match bytes {
        b if b < 1024 => format!("{b} bytes"),
        b if b < 1024 * 1024 => format!("{} KB", b.div_ceil(1024)),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// `text` cut to `max_chars` characters on a character boundary, with the note saying so.
pub fn bound(text: String, max_chars: usize) -> (String, Option<String>) {
    match text.char_indices().nth(max_chars) {
        None => (text, None),
        Some((cut_at, _)) => {
            let total = text.chars().count();
            let note = format!("cut: {total} characters, the first {max_chars} kept");
            let mut text = text;
            text.truncate(cut_at);
            (text, Some(note))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    fn result(content: Vec<ContentBlock>, structured: Option<serde_json::Value>) -> CallToolResult {
        let mut r = CallToolResult::success(content);
        r.structured_content = structured;
        r
    }

    #[test]
    fn text_parts_are_joined_with_newlines_and_structured_content_is_left_out() {
        let r = result(
            vec![ContentBlock::text("a"), ContentBlock::text("b")],
            Some(serde_json::json!({"x": 1})),
        );
        let t = to_tool_result(&r, 100, Duration::ZERO);
        assert_eq!((t.text.as_str(), t.is_error, t.note), ("a\nb", false, None));
    }

    #[test]
    fn structured_content_is_compact_json_when_there_is_no_text() {
        let r = result(vec![], Some(serde_json::json!({"sum": 3, "ok": true})));
        assert_eq!(
            to_tool_result(&r, 100, Duration::ZERO).text,
            r#"{"sum":3,"ok":true}"#
        );
    }

    #[test]
    fn an_image_is_described_with_its_type_and_size() {
        let data = "A".repeat(16384); // 12 KB decoded
        let r = result(vec![ContentBlock::image(data, "image/png")], None);
        let t = to_tool_result(&r, 1000, Duration::ZERO).text;
        assert_eq!(t, "[image image/png, 12 KB: not shown to the model]");
    }

    #[test]
    fn a_long_text_is_cut_on_a_character_boundary_with_a_note() {
        let (text, note) = bound("héllo wörld".repeat(3), 7);
        assert_eq!(text, "héllo w");
        assert_eq!(
            note.as_deref(),
            Some("cut: 33 characters, the first 7 kept")
        );
        assert_eq!(bound("short".into(), 5), ("short".to_string(), None));
    }

    #[test]
    fn is_error_is_carried_over() {
        let r = CallToolResult::error(vec![ContentBlock::text("bad")]);
        let t = to_tool_result(&r, 100, Duration::ZERO);
        assert!(t.is_error && t.text == "bad");
    }
}
