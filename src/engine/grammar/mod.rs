//! Constrained decoding: an answer held to a JSON Schema, any JSON object, a Lark grammar or a
//! regular expression, with llguidance (the library llama.cpp, vLLM and SGLang use) over
//! taper's own tokenizer. Before each token the grammar's mask removes every token that
//! cannot continue a valid answer; the sampled token advances it; once the grammar is complete
//! only the end-of-turn token is allowed, so the answer ends where the grammar does.
//!
//! A triggered grammar (tool calls in `auto` mode) waits: no mask until the answer's bytes
//! hold its trigger, then the grammar reads the answer from the trigger on and holds the rest.

mod vocab;

use crate::engine::tokenizer::TextTokenizer;
use crate::protocol::Constraint;
use anyhow::{anyhow, Result};
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::json;

/// A model's grammar compiler: its vocabulary's trie and llguidance's precomputed token
/// classes, built once per model (on first use: most answers have no grammar).
pub struct Grammars {
    factory: ParserFactory,
}

impl Grammars {
    pub fn new(tokenizer: &TextTokenizer) -> Result<Self> {
        let env = vocab::token_env(tokenizer)?;
        let mut factory = ParserFactory::new_simple(&env)?;
        // llguidance's own log lines would land on the chat's screen.
        factory.set_stderr_log_level(0);
        Ok(Self { factory })
    }

    /// The grammar state of one answer; an invalid or unsupported constraint is an error that
    /// names the problem, before any token is generated.
    pub fn start(&self, constraint: &Constraint) -> Result<Grammar> {
        let grammar = match constraint {
            Constraint::JsonObject => TopLevelGrammar::from_json_schema(compact(json!({
                "type": "object"
            }))),
            Constraint::JsonSchema(schema) => {
                TopLevelGrammar::from_json_schema(compact(schema.clone()))
            }
            Constraint::Lark(lark) => TopLevelGrammar::from_lark(lark.clone()),
            Constraint::Regex(rx) => TopLevelGrammar::from_regex(rx),
            Constraint::Triggered { lark, .. } => TopLevelGrammar::from_lark(lark.clone()),
        };
        let parser = self
            .factory
            .create_parser(grammar)
            .map_err(|e| anyhow!("{} cannot be used: {e}", constraint.describe()))?;
        let matcher = Matcher::new(Ok(parser));
        if let Some(e) = matcher.get_error() {
            return Err(anyhow!("{} cannot be used: {e}", constraint.describe()));
        }
        let waiting = match constraint {
            Constraint::Triggered { trigger, .. } => Some(Waiting {
                trigger: trigger.as_bytes().to_vec(),
                answer: Vec::new(),
            }),
            _ => None,
        };
        Ok(Grammar { matcher, waiting })
    }
}

/// A schema the user gave, written compactly (see [`Constraint::compact`]) and refused when
/// llguidance does not know a keyword of it.
fn compact(schema: serde_json::Value) -> serde_json::Value {
    Constraint::compact(schema, false)
}

/// One answer's place in its grammar.
pub struct Grammar {
    matcher: Matcher,
    /// A triggered grammar not yet triggered.
    waiting: Option<Waiting>,
}

/// The answer so far of a triggered grammar that has not seen its trigger.
struct Waiting {
    trigger: Vec<u8>,
    answer: Vec<u8>,
}

impl Grammar {
    /// Whether the grammar holds the answer now (a triggered one only after its trigger).
    pub fn is_active(&self) -> bool {
        self.waiting.is_none()
    }

    /// Sets the logit of every token the grammar does not allow next to minus infinity. Once
    /// the grammar is complete only the end-of-turn token remains.
    pub fn mask(&mut self, logits: &mut [f32]) -> Result<()> {
        if self.waiting.is_some() {
            return Ok(());
        }
        let allowed = self
            .matcher
            .compute_mask_or_eos()
            .map_err(|e| anyhow!("the grammar failed: {e}"))?;
        for (id, logit) in logits.iter_mut().enumerate() {
            if !allowed.is_allowed(id as u32) {
                *logit = f32::NEG_INFINITY;
            }
        }
        Ok(())
    }

    /// The token the sampler chose (one the mask allowed).
    pub fn accept(&mut self, id: u32) -> Result<()> {
        if let Some(waiting) = self.waiting.as_mut() {
            let env = self
                .matcher
                .tok_env()
                .map_err(|e| anyhow!("the grammar failed: {e}"))?;
            waiting.answer.extend_from_slice(env.tok_trie().token(id));
            let Some(at) = find(&waiting.answer, &waiting.trigger) else {
                return Ok(());
            };
            // The grammar starts with the trigger: it reads the answer's bytes from there
            // (in whatever tokens; llguidance works on bytes).
            let tokens = env.tokenize_bytes(&waiting.answer[at..]);
            self.waiting = None;
            return self
                .matcher
                .consume_tokens(&tokens)
                .map_err(|e| anyhow!("the tool call does not follow its grammar: {e}"));
        }
        if self.matcher.is_stopped() {
            return Ok(());
        }
        self.matcher
            .consume_token(id)
            .map_err(|e| anyhow!("the grammar failed: {e}"))
    }

    /// The answer so far is a whole sentence of the grammar (it may still go on).
    pub fn is_complete(&mut self) -> bool {
        self.waiting.is_some()
            || self.matcher.is_stopped()
            || self.matcher.is_accepting().unwrap_or(false)
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tokenizer::tests::byte_level;

    /// The tokens a grammar allows next, out of the test vocabulary.
    fn allowed(grammar: &mut Grammar, vocab: usize) -> Vec<u32> {
        let mut logits = vec![0.0; vocab];
        grammar.mask(&mut logits).expect("a mask");
        (0..vocab as u32)
            .filter(|&i| logits[i as usize].is_finite())
            .collect()
    }

    #[test]
    fn a_regex_allows_only_what_continues_it_then_only_the_end() {
        let tokenizer = byte_level();
        let vocab = tokenizer.vocab_size();
        let grammars = Grammars::new(&tokenizer).expect("a byte-level vocabulary");
        let mut g = grammars
            .start(&Constraint::Regex("ab?".into()))
            .expect("a valid regex");
        let a = tokenizer.encode("a").unwrap()[0];
        let b = tokenizer.encode("b").unwrap()[0];
        assert_eq!(allowed(&mut g, vocab), vec![a]);
        g.accept(a).unwrap();
        assert!(g.is_complete());
        let eos = tokenizer.stop_ids()[0];
        assert_eq!(allowed(&mut g, vocab), vec![b, eos]);
        g.accept(b).unwrap();
        assert_eq!(allowed(&mut g, vocab), vec![eos]);
    }

    #[test]
    fn a_json_object_starts_with_a_brace_and_never_with_a_special_token() {
        let tokenizer = byte_level();
        let grammars = Grammars::new(&tokenizer).unwrap();
        let mut g = grammars.start(&Constraint::JsonObject).unwrap();
        let first = allowed(&mut g, tokenizer.vocab_size());
        let texts: Vec<String> = first
            .iter()
            .map(|&id| tokenizer.decode(&[id]).unwrap())
            .collect();
        assert!(
            texts
                .iter()
                .all(|t| t.trim_start().starts_with('{') || t.trim().is_empty()),
            "{texts:?}"
        );
        assert!(first.iter().all(|&id| !tokenizer.is_control(id)));
    }

    #[test]
    fn a_bad_schema_or_grammar_is_refused_with_its_reason() {
        let tokenizer = byte_level();
        let grammars = Grammars::new(&tokenizer).unwrap();
        let bad_schema = Constraint::JsonSchema(json!({"type": "no-such-type"}));
        let e = grammars
            .start(&bad_schema)
            .err()
            .expect("refused")
            .to_string();
        assert!(e.starts_with("the JSON schema cannot be used"), "{e}");
        let bad_lark = Constraint::Lark("start: (".into());
        let e = grammars
            .start(&bad_lark)
            .err()
            .expect("refused")
            .to_string();
        assert!(e.starts_with("the grammar cannot be used"), "{e}");
    }

    #[test]
    fn a_triggered_grammar_is_free_until_its_trigger_then_holds_the_rest() {
        let tokenizer = byte_level();
        let vocab = tokenizer.vocab_size();
        let grammars = Grammars::new(&tokenizer).unwrap();
        let mut g = grammars
            .start(&Constraint::Triggered {
                trigger: "<call>".into(),
                lark: r#"start: "<call>" ("yes" | "no")"#.into(),
            })
            .unwrap();
        assert!(!g.is_active());
        assert_eq!(
            allowed(&mut g, vocab).len(),
            vocab,
            "no mask before the trigger"
        );
        for id in tokenizer.encode("Sure. <ca").unwrap() {
            g.accept(id).unwrap();
        }
        assert!(!g.is_active());
        for id in tokenizer.encode("ll>").unwrap() {
            g.accept(id).unwrap();
        }
        assert!(g.is_active());
        let next: Vec<String> = allowed(&mut g, vocab)
            .iter()
            .map(|&id| tokenizer.decode(&[id]).unwrap())
            .collect();
        assert_eq!(next, ["n", "y"]);
    }
}
