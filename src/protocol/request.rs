//! What a client asks of the engine: load a model ([`LoadRequest`]) and answer a prompt
//! ([`GenerateRequest`]). The chat, `taper ask` and `taper serve` all ask with these.

use super::sampling::{CacheType, SamplingParams};
use super::speculation::Speculation;
use super::tools::ToolSet;
use crate::chat::Message;
use std::path::PathBuf;

/// Load a model in place of the one in use, which is kept loaded (up to `keep_loaded` models,
/// memory permitting) or released first.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    pub model_path: PathBuf,
    /// A tokenizer.json to use instead of the vocabulary in the GGUF.
    pub tokenizer_json: Option<PathBuf>,
    /// Requested KV-cache size; capped at the model's training context.
    pub context_size: usize,
    /// The KV cache's number format.
    pub cache_type: CacheType,
    /// A chat template to use instead of the file's.
    pub chat_template: Option<String>,
    /// Models kept loaded at most, this one included (1: the one in use is released before
    /// this one is read). The least recently used leaves first, and any leave when the
    /// machine's available memory would not hold this one.
    pub keep_loaded: usize,
    /// A smaller model with the same vocabulary that drafts tokens for requests with
    /// [`Speculation::Draft`]; loaded with the first such request.
    pub draft_model: Option<PathBuf>,
}

impl LoadRequest {
    /// Whether `other` asks for the same model, loaded the same way (a model kept loaded
    /// serves either).
    pub fn same_model(&self, other: &LoadRequest) -> bool {
        self.model_path == other.model_path
            && self.tokenizer_json == other.tokenizer_json
            && self.context_size == other.context_size
            && self.cache_type == other.cache_type
            && self.chat_template == other.chat_template
            && self.draft_model == other.draft_model
    }
}

/// What the model reads before it answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// A conversation, rendered with the model's chat template by the engine; when it does
    /// not fit the context, its oldest turns are left out (the chat, `taper ask`).
    Conversation(Vec<Message>),
    /// The last message's text as is, without a chat template (base models, `--raw`).
    Raw(Vec<Message>),
    /// Ids already templated and tokenized by the client, known to fit (`taper serve`, whose
    /// HTTP threads tokenize while the engine decodes).
    Tokens(Vec<u32>),
    /// A conversation whose last message is an answer cut short: the model goes on writing
    /// that answer (the chat's continue). Only the new text is streamed.
    Continue(Vec<Message>),
}

impl Prompt {
    /// The conversation, for a backend that takes messages (a remote server); None for ids.
    pub fn messages(&self) -> Option<&[Message]> {
        match self {
            Prompt::Conversation(m) | Prompt::Raw(m) | Prompt::Continue(m) => Some(m),
            Prompt::Tokens(_) => None,
        }
    }
}

/// What an answer must match (OpenAI's `response_format`, llama-server's `grammar` and
/// `json_schema`, `taper ask --json`).
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint {
    /// Any JSON object.
    JsonObject,
    /// JSON valid against this JSON Schema.
    JsonSchema(serde_json::Value),
    /// A grammar in llguidance's Lark syntax.
    Lark(String),
    /// A regular expression the whole answer matches.
    Regex(String),
    /// A lazy grammar: the answer is free until its text holds `trigger` (a model's tool-call
    /// marker); from the trigger's first byte on, the rest of the answer matches `lark`
    /// (llguidance's Lark syntax), so a model may answer in prose or call a tool.
    Triggered { trigger: String, lark: String },
}

impl Constraint {
    /// `schema` with llguidance's `x-guidance` options for JSON written the way it usually is
    /// (`{"a": 1, "b": [2, 3]}`), unless the schema sets its own: with free white space a small
    /// model pads its answer with runs of spaces and new lines, valid JSON that wastes tokens.
    /// `lenient` ignores keywords llguidance does not know instead of refusing the schema.
    pub fn compact(mut schema: serde_json::Value, lenient: bool) -> serde_json::Value {
        if let Some(object) = schema.as_object_mut() {
            object.entry("x-guidance").or_insert_with(|| {
                let mut options = serde_json::json!({
                    "whitespace_flexible": false,
                    "item_separator": ", ",
                    "key_separator": ": ",
                });
                if lenient {
                    options["lenient"] = serde_json::json!(true);
                }
                options
            });
        }
        schema
    }

    /// What it is, for sentences about it.
    pub fn describe(&self) -> &'static str {
        match self {
            Constraint::JsonObject => "the JSON object format",
            Constraint::JsonSchema(_) => "the JSON schema",
            Constraint::Lark(_) => "the grammar",
            Constraint::Regex(_) => "the regular expression",
            Constraint::Triggered { .. } => "the tool-call grammar",
        }
    }
}

/// Answer a prompt.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    /// Events of this generation carry it; a client ignores events of stale turns, and
    /// cancels a turn by it.
    pub turn_id: u64,
    pub prompt: Prompt,
    pub sampling: SamplingParams,
    /// Most tokens to generate (the end-of-turn token not counted).
    pub max_tokens: usize,
    /// The answer ends before the first of these strings (OpenAI's `stop`).
    pub stop: Vec<String>,
    /// Remember the answer's ids, so that the next turn of its conversation, quoting it back,
    /// reuses the cache (chats; not raw completions).
    pub remember_answer: bool,
    /// Hold the answer to a grammar.
    pub constraint: Option<Constraint>,
    /// Tools the model may call: the engine renders them into the prompt of a conversation
    /// and, unless `constraint` is given, holds the calls to the model's tool-call syntax.
    pub tools: Option<ToolSet>,
    /// With tools: `Token` events carry the answer's thinking and prose only, the text of its
    /// calls held back (they come whole in `Finished::tool_calls`). For people reading the
    /// answer (the chat, `ask`); the server reads the raw text itself.
    pub prose_only: bool,
    /// Whether tokens are drafted ahead and verified in one pass; never changes what is
    /// sampled (greedy answers are the same bits, sampled ones the same distribution).
    pub speculation: Speculation,
}

impl GenerateRequest {
    /// A chat turn: `messages` templated (or the last one's text, when `raw`), no stop
    /// strings, the answer remembered.
    pub fn chat(
        turn_id: u64,
        messages: Vec<Message>,
        raw: bool,
        sampling: SamplingParams,
        max_tokens: usize,
    ) -> Self {
        Self {
            turn_id,
            prompt: if raw {
                Prompt::Raw(messages)
            } else {
                Prompt::Conversation(messages)
            },
            sampling,
            max_tokens,
            stop: Vec::new(),
            remember_answer: true,
            constraint: None,
            tools: None,
            prose_only: true,
            speculation: Speculation::default(),
        }
    }

    /// The conversation asked about (empty for a prompt of ids).
    pub fn messages(&self) -> &[Message] {
        self.prompt.messages().unwrap_or_default()
    }

    /// The last message's text goes to the model untemplated.
    pub fn is_raw(&self) -> bool {
        matches!(self.prompt, Prompt::Raw(_))
    }
}
