//! A conversation as one model's prompt: its chat template rendered and tokenized, BOS added
//! when the model wants one, the model's own ids put back for its earlier answers, and the
//! oldest turns left out when the whole does not fit.

use super::answer_ids::AnswerIds;
use super::context_fit::{fit_conversation, FittedPrompt, Window};
use super::gguf::GgufHeader;
use super::grammar::Grammars;
use super::template::ChatTemplate;
use super::tokenizer::TextTokenizer;
use crate::chat::Message;
use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;
use std::sync::OnceLock;

/// A model's tokenizer and chat template: what turns a conversation into its prompt ids; and
/// its grammar compiler, built the first time an answer is constrained.
pub struct ModelText {
    pub tokenizer: TextTokenizer,
    pub template: ChatTemplate,
    grammars: OnceLock<std::result::Result<Grammars, String>>,
}

impl ModelText {
    /// The tokenizer the file describes (or `tokenizer_json`), and its chat template (or
    /// `chat_template`). Errors name the file.
    pub fn load(
        header: &GgufHeader,
        tokenizer_json: Option<&Path>,
        chat_template: Option<&str>,
    ) -> Result<Self> {
        let path = header.path.display().to_string();
        let tokenizer = match tokenizer_json {
            Some(json) => TextTokenizer::from_tokenizer_json(json, header),
            None => TextTokenizer::from_gguf(header),
        }
        .with_context(|| format!("{path}: tokenizer"))?;
        let has_token = |t: &str| tokenizer.token_to_id(t).is_some();
        let template = ChatTemplate::for_model(header, chat_template, &has_token)
            .with_context(|| format!("{path}: chat template"))?;
        Ok(Self {
            tokenizer,
            template,
            grammars: OnceLock::new(),
        })
    }

    /// The model's grammar compiler (its vocabulary's trie, built once).
    pub fn grammars(&self) -> Result<&Grammars> {
        self.grammars
            .get_or_init(|| Grammars::new(&self.tokenizer).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| anyhow!("{e}"))
    }

    /// The prompt of a whole conversation, ending where the model's answer begins. Answers
    /// in `answers` keep the ids the model wrote them with.
    pub fn chat_ids(&self, messages: &[Message], answers: &AnswerIds) -> Result<Vec<u32>> {
        let bos = self.tokenizer.bos_token().unwrap_or_default();
        let eos = self.tokenizer.eos_token().unwrap_or_default();
        let text = self.template.render(messages, true, &bos, &eos)?;
        let has_bos = !bos.is_empty() && ChatTemplate::starts_with_bos(&text, &bos);
        let tokens = self.tokenizer.encode(&text)?;
        let tokens = answers.splice(&self.tokenizer, &text, messages, tokens);
        self.with_bos(tokens, has_bos)
    }

    /// `text` as is, no template (base models): BOS when the model wants one.
    pub fn raw_ids(&self, text: &str) -> Result<Vec<u32>> {
        self.with_bos(self.tokenizer.encode(text)?, false)
    }

    /// The conversation's prompt within `budget` tokens: the oldest turns left out as
    /// [`fit_conversation`] says. `raw` sends the last message's text alone, untemplated.
    pub fn fitted(
        &self,
        messages: &[Message],
        raw: bool,
        budget: usize,
        window: Window,
        answers: &AnswerIds,
    ) -> Result<FittedPrompt> {
        if raw {
            let last = messages.len().saturating_sub(1);
            return fit_conversation(&messages[last..], budget, Window::default(), |msgs| {
                self.raw_ids(msgs.last().map(|m| m.content.as_str()).unwrap_or(""))
            });
        }
        fit_conversation(messages, budget, window, |msgs| {
            self.chat_ids(msgs, answers)
        })
    }

    /// Prepends BOS when the model wants one and the text does not already start with it.
    pub fn with_bos(&self, mut tokens: Vec<u32>, has_bos: bool) -> Result<Vec<u32>> {
        if self.tokenizer.add_bos() && !has_bos {
            if let Some(bos) = self.tokenizer.bos_id() {
                if tokens.first() != Some(&bos) {
                    tokens.insert(0, bos);
                }
            }
        }
        if tokens.is_empty() {
            bail!("the prompt is empty");
        }
        Ok(tokens)
    }
}
