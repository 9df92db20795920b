//! A session as a readable Markdown transcript (`taper export --markdown`, and the TUI's
//! export key).

use super::format::{SavedMessage, SavedSampling, SavedStatus, Session};
use super::time::format_utc;
use crate::chat::Role;
use std::fmt::Write;

pub fn to_markdown(s: &Session) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "# {}\n", s.display_title());
    let _ = writeln!(out, "- Session: `{}`", s.id);
    let _ = writeln!(
        out,
        "- Started {}, last saved {}",
        format_utc(s.created_at),
        format_utc(s.updated_at)
    );
    let models = s.models();
    if !models.is_empty() {
        let _ = writeln!(out, "- Models: {}", models.join(", "));
    }
    let _ = writeln!(out, "- Sampling: {}", sampling_line(&s.sampling));
    let path = s.path();
    let elsewhere = s.messages.len() - path.len();
    if elsewhere > 0 {
        let _ = writeln!(
            out,
            "- Branches: this is the branch on screen; {elsewhere} more message{} on other \
             branches are in the session file",
            if elsewhere == 1 { "" } else { "s" }
        );
    }
    if !s.system_prompt.trim().is_empty() {
        let _ = writeln!(out, "\n## System prompt\n");
        for line in s.system_prompt.lines() {
            let _ = writeln!(out, "> {line}");
        }
    }
    for m in path {
        let _ = writeln!(out, "\n---\n\n## {}\n", heading(m));
        own_settings(&mut out, s, m);
        if m.role == Role::Tool {
            tool_result(&mut out, m);
            continue;
        }
        let content = m.content.trim_end();
        if !content.is_empty() {
            let _ = writeln!(out, "{content}");
            // An unclosed fence (a stopped answer) would swallow the rest of the transcript.
            if content
                .lines()
                .filter(|l| l.trim_start().starts_with("```"))
                .count()
                % 2
                == 1
            {
                let _ = writeln!(out, "```");
            }
        }
        for call in &m.tool_calls {
            let _ = writeln!(out, "\nCalls `{}` (`{}`):\n", call.name, call.id);
            let _ = writeln!(out, "```json\n{}\n```", call.arguments.trim());
        }
        match (m.status, &m.error) {
            (Some(SavedStatus::Stopped), _) => {
                let _ = writeln!(out, "\n*(stopped)*");
            }
            (Some(SavedStatus::Failed), Some(e)) => {
                let _ = writeln!(out, "\n*(failed: {e})*");
            }
            (Some(SavedStatus::Failed), None) => {
                let _ = writeln!(out, "\n*(failed)*");
            }
            _ => {
                let cut = m
                    .usage
                    .as_ref()
                    .and_then(|u| u.stop?.cut_short(u.generated_tokens));
                if let Some(cut) = cut {
                    let _ = writeln!(out, "\n*({cut})*");
                }
            }
        }
    }
    out
}

/// The sampling settings in one line.
fn sampling_line(p: &SavedSampling) -> String {
    let seed = p.seed.map_or("random".to_string(), |s| s.to_string());
    format!(
        "temperature {}, top-k {}, top-p {}, min-p {}, repeat penalty {}, seed {}, at most {} \
         tokens",
        p.temperature, p.top_k, p.top_p, p.min_p, p.repeat_penalty, seed, p.max_tokens
    )
}

/// An answer written with other settings or another system prompt than the session's
/// (the header's) says which.
fn own_settings(out: &mut String, s: &Session, m: &SavedMessage) {
    if let Some(p) = m.sampling.as_ref().filter(|p| **p != s.sampling) {
        let _ = writeln!(out, "*Sampling for this answer: {}*\n", sampling_line(p));
    }
    if let Some(prompt) = m.system_prompt.as_ref().filter(|p| **p != s.system_prompt) {
        if prompt.trim().is_empty() {
            let _ = writeln!(out, "*No system prompt for this answer.*\n");
            return;
        }
        let _ = writeln!(out, "*System prompt for this answer:*\n");
        for line in prompt.lines() {
            let _ = writeln!(out, "> {line}");
        }
        let _ = writeln!(out);
    }
}

/// A tool's result as a fenced block (it may be any text), with what was cut.
fn tool_result(out: &mut String, m: &SavedMessage) {
    let fence = fence_for(&m.content);
    let _ = writeln!(out, "{fence}\n{}\n{fence}", m.content.trim_end());
    if let Some(note) = &m.note {
        let _ = writeln!(out, "\n*({note})*");
    }
}

/// A code fence longer than any run of backticks in `text`, so the text cannot close it.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

fn heading(m: &SavedMessage) -> String {
    let time = format_utc(m.at);
    match m.role {
        Role::User => format!("You · {time}"),
        Role::System => format!("System · {time}"),
        Role::Tool => {
            let name = m.tool_name.as_deref().unwrap_or("tool");
            let failed = if m.is_error { " (failed)" } else { "" };
            format!("Result of `{name}`{failed} · {time}")
        }
        Role::Assistant => {
            let model = m.model.as_deref().unwrap_or("assistant");
            match &m.usage {
                Some(u) => format!(
                    "{model} · {time} · {} prompt + {} generated tokens, {:.1} tok/s, \
                     first token after {:.2} s",
                    u.prompt_tokens, u.generated_tokens, u.decode_tok_s, u.ttft_s
                ),
                None => format!("{model} · {time}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::format::tests::sample;

    #[test]
    fn the_transcript_has_the_messages_models_and_figures() {
        let md = to_markdown(&sample());
        assert!(md.starts_with("# What is 2+2?\n"), "{md}");
        assert!(md.contains("- Models: SmolLM2\n"), "{md}");
        assert!(md.contains("## System prompt\n\n> Be brief.\n"), "{md}");
        assert!(
            md.contains("## You · 2025-11-30 12:48 UTC\n\nWhat is 2+2?\n"),
            "{md}"
        );
        assert!(
            md.contains(
                "## SmolLM2 · 2025-11-30 12:48 UTC · 20 prompt + 5 generated tokens, \
                 50.0 tok/s, first token after 0.10 s\n\nIt is 4.\n"
            ),
            "{md}"
        );
        assert!(!md.contains("stopped"), "{md}");
    }

    #[test]
    fn tool_calls_and_results_are_in_the_transcript() {
        let mut s = crate::sessions::format::tests::with_tools();
        s.messages[2].content = "a ``` fence".into();
        let md = to_markdown(&s);
        assert!(
            md.contains("Calls `add` (`call_1`):\n\n```json\n{\"a\": 2, \"b\": 2}\n```"),
            "{md}"
        );
        assert!(md.contains("## Result of `add` · "), "{md}");
        assert!(md.contains("````\na ``` fence\n````\n"), "{md}");
    }

    #[test]
    fn a_stopped_answer_inside_a_code_block_is_closed_and_marked() {
        let mut s = sample();
        s.messages[1].content = "```rust\nfn main() {".into();
        s.messages[1].status = Some(SavedStatus::Stopped);
        let md = to_markdown(&s);
        assert!(md.contains("fn main() {\n```\n\n*(stopped)*\n"), "{md}");
    }

    #[test]
    fn an_answer_cut_at_the_token_limit_says_so() {
        let mut s = sample();
        if let Some(u) = s.messages[1].usage.as_mut() {
            u.stop = Some(crate::protocol::StopReason::MaxTokens);
        }
        let md = to_markdown(&s);
        assert!(
            md.contains("It is 4.\n\n*(cut at the limit of 5 tokens, before the model finished)*"),
            "{md}"
        );
    }
}
