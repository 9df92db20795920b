//! A conversation as one model's prompt: its chat template rendered and tokenized, BOS added
//! when the model wants one, the model's own ids put back for its earlier answers, and the
//! oldest turns left out when the whole does not fit.

use super::answer_ids::AnswerIds;
use super::context_fit::{fit_conversation, FittedPrompt, Window};
use super::gguf::GgufHeader;
use super::grammar::Grammars;
use super::template::ChatTemplate;
use super::tokenizer::TextTokenizer;
use crate::chat::{Message, Role};
use crate::protocol::{Constraint, ToolSet};
use crate::tools::{generic, grammar};
use anyhow::{anyhow, bail, Context, Result};
use std::borrow::Cow;
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
        self.chat_ids_with_tools(messages, None, answers)
    }

    /// [`ModelText::chat_ids`] with the tools the model may call.
    pub fn chat_ids_with_tools(
        &self,
        messages: &[Message],
        tools: Option<&ToolSet>,
        answers: &AnswerIds,
    ) -> Result<Vec<u32>> {
        let (text, messages) = self.render(messages, tools)?;
        let bos = self.tokenizer.bos_token().unwrap_or_default();
        let has_bos = !bos.is_empty() && ChatTemplate::starts_with_bos(&text, &bos);
        let tokens = self.tokenizer.encode(&text)?;
        let tokens = answers.splice(&self.tokenizer, &text, &messages, tokens);
        self.with_bos(tokens, has_bos)
    }

    /// The prompt text of a conversation (llama-server's `/apply-template`), and the messages
    /// as the template saw them: a template that knows no tools gets them described in the
    /// system message and earlier calls written in the generic form.
    pub fn render<'m>(
        &self,
        messages: &'m [Message],
        tools: Option<&ToolSet>,
    ) -> Result<(String, Cow<'m, [Message]>)> {
        let bos = self.tokenizer.bos_token().unwrap_or_default();
        let eos = self.tokenizer.eos_token().unwrap_or_default();
        let format = self.template.tool_format();
        let offered = tools.filter(|t| !t.tools.is_empty());
        let (messages, template_tools): (Cow<[Message]>, _) = if format.template_knows_tools() {
            (Cow::Borrowed(messages), offered.map(ToolSet::as_openai))
        } else {
            // Earlier calls and results are written in the generic form even when no tools
            // are offered now, so that every template can render them. Tools offered with
            // `none` are still described (the grammar then allows only a reply): the same
            // system message keeps the cache of a tool loop's earlier rounds.
            let described = offered;
            let has_calls = messages
                .iter()
                .any(|m| m.role == Role::Tool || !m.tool_calls.is_empty());
            if described.is_some() || has_calls {
                (Cow::Owned(generic::conversation(messages, described)), None)
            } else {
                (Cow::Borrowed(messages), None)
            }
        };
        let text = self.template.render_with_tools(
            &messages,
            template_tools.as_deref(),
            true,
            &bos,
            &eos,
        )?;
        Ok((text, messages))
    }

    /// What holds an answer's tool calls to the model's syntax and the tools' schemas; None
    /// when nothing does (`tool_choice: none`).
    pub fn tool_constraint(&self, tools: &ToolSet) -> Option<Constraint> {
        if tools.tools.is_empty() {
            return None;
        }
        // Markers the vocabulary holds as control tokens (Gemma 4's `<|tool_call>`, Mistral's
        // `[TOOL_CALLS]`) are allowed as those tokens, as the model was taught to write them.
        let special = |marker: &str| {
            let id = self.tokenizer.token_to_id(marker)?;
            self.tokenizer.is_control(id).then_some(id)
        };
        grammar::constraint_with(self.template.tool_format(), tools, &special)
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
        tools: Option<&ToolSet>,
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
            self.chat_ids_with_tools(msgs, tools, answers)
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
