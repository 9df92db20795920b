//! Chat templates: turning a conversation into the prompt text a model was trained on.
//!
//! Templates are Jinja, rendered with minijinja configured the way Hugging Face transformers
//! renders them in `apply_chat_template` (trim_blocks, lstrip_blocks, Python string methods,
//! `raise_exception`, its own `tojson`, `strftime_now`, loop controls). A template comes
//! from the GGUF file (or a user override) and is untrusted code: rendering is bounded by a
//! fuel budget, a recursion limit and an output cap, and there is no loader, so templates
//! cannot read files. Models without a template get a built-in one for their family, and
//! the API says so (see [`ChatTemplate::notice`]).

mod compat;
mod json;
mod limits;
mod message;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_python;

use crate::chat::Message;
use crate::engine::gguf::GgufHeader;
use crate::tools::ToolFormat;
use anyhow::{anyhow, bail, Context as _};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{context, AutoEscape, Environment, ErrorKind, Value};
use std::io;

/// The name the template is registered under; it shows up in error locations.
const TEMPLATE_NAME: &str = "chat_template";
/// Real templates are a few kilobytes (the largest with tool formatting around 30 KB); a
/// bigger one is not a chat template and is refused before parsing.
const MAX_TEMPLATE_BYTES: usize = 256 * 1024;
/// Fuel every render gets regardless of input: about a million template instructions or
/// 64 MB of created data, well beyond what real templates need for a long conversation
/// (they run tens of instructions per message) and small enough to stop a runaway loop in
/// well under a second.
const BASE_FUEL: u64 = 1_000_000;
/// Extra fuel per message, for templates that loop over the conversation more than once.
const FUEL_PER_MESSAGE: u64 = 2_000;
/// However long the conversation, a render never gets more than this (bounding time,
/// memory and the render thread's stack below).
const MAX_FUEL: u64 = 4_000_000;
/// Each level of nesting costs a template at least ~5 fuel to build and minijinja up to
/// ~400 bytes of stack to walk (measured: 100k levels need 32-40 MB), so ~96 bytes of
/// stack per unit of fuel covers the deepest value a render can build.
const RENDER_STACK_PER_FUEL: usize = 96;
const RENDER_STACK_BASE: usize = 16 * 1024 * 1024;
/// minijinja's own default is 500 frames; real templates nest a handful of macros at most,
/// and a lower limit keeps the stack of an engine thread safe.
const RECURSION_LIMIT: usize = 200;
/// The prompt can never usefully be longer than the input times a small factor plus room
/// for a long default system prompt or tool descriptions.
const BASE_OUTPUT_BYTES: usize = 1024 * 1024;
const OUTPUT_BYTES_PER_INPUT_BYTE: usize = 4;

/// Where a chat template came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSource {
    /// `tokenizer.chat_template` in the GGUF file.
    File,
    /// A built-in template for the named family, because the file had none (or an unusable one).
    BuiltIn(&'static str),
    /// Text the user supplied.
    Override,
}

/// A compiled chat template, ready to render conversations.
pub struct ChatTemplate {
    env: Environment<'static>,
    origin: TemplateSource,
    notice: Option<String>,
    tool_format: ToolFormat,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("origin", &self.origin)
            .field("notice", &self.notice)
            .finish_non_exhaustive()
    }
}

/// A built-in template: family name and Jinja source.
struct BuiltIn {
    family: &'static str,
    source: &'static str,
}

const CHATML: BuiltIn = BuiltIn {
    family: "ChatML",
    source: include_str!("../../assets/templates/chatml.jinja"),
};
const GEMMA: BuiltIn = BuiltIn {
    family: "Gemma",
    source: include_str!("../../assets/templates/gemma.jinja"),
};
const GEMMA4: BuiltIn = BuiltIn {
    family: "Gemma 4",
    source: include_str!("../../assets/templates/gemma4.jinja"),
};
const PHI3: BuiltIn = BuiltIn {
    family: "Phi-3",
    source: include_str!("../../assets/templates/phi3.jinja"),
};
const LLAMA3: BuiltIn = BuiltIn {
    family: "Llama 3",
    source: include_str!("../../assets/templates/llama3.jinja"),
};

/// Picks the built-in template for a model by architecture and vocabulary.
fn builtin_for(architecture: &str, has_token: &dyn Fn(&str) -> bool) -> BuiltIn {
    if architecture.starts_with("gemma") {
        // Gemma 4 changed the turn markers; its vocabulary tells the two formats apart.
        if has_token("<|turn>") && !has_token("<start_of_turn>") {
            return GEMMA4;
        }
        return GEMMA;
    }
    if architecture == "phi3" {
        return PHI3;
    }
    // Llama 3 shares the "llama" architecture with Llama 2, SmolLM and many others; only
    // its header tokens identify it.
    if has_token("<|start_header_id|>") {
        return LLAMA3;
    }
    CHATML
}

impl ChatTemplate {
    /// From the GGUF (or a user override text when Some), choosing a built-in one if the
    /// file has none.
    ///
    /// A template in the file that minijinja cannot compile also falls back to the built-in
    /// one (with a notice naming the problem): the model stays usable, and the user can
    /// supply an override. An override that does not compile is an error.
    pub fn for_model(
        header: &GgufHeader,
        override_template: Option<&str>,
        has_token: &dyn Fn(&str) -> bool,
    ) -> anyhow::Result<Self> {
        if let Some(text) = override_template {
            return Self::from_source(text, TemplateSource::Override)
                .context("the chat template override cannot be used");
        }
        let file_name = header
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| header.path.display().to_string());
        let builtin = builtin_for(header.architecture().unwrap_or(""), has_token);
        let why = match header.get_str("tokenizer.chat_template") {
            Some(text) if !text.trim().is_empty() => {
                match Self::from_source(text, TemplateSource::File) {
                    Ok(template) => return Ok(template),
                    Err(err) => format!("{file_name}'s chat template cannot be used ({err:#})"),
                }
            }
            // Most files without one hold a base model, which a chat template does not turn
            // into a chat model: its answers may wander and run to the token limit.
            _ => format!(
                "{file_name} has no chat template (base models, not tuned for chat, have none, \
                 and their answers may wander and not stop)"
            ),
        };
        let mut template =
            Self::from_source(builtin.source, TemplateSource::BuiltIn(builtin.family))?;
        template.notice = Some(format!(
            "{why}; using the built-in {} template",
            builtin.family
        ));
        Ok(template)
    }

    /// Compiles template text. For [`TemplateSource::BuiltIn`] the text is normally the
    /// built-in source of that family, and a generic notice is attached.
    pub fn from_source(source: &str, origin: TemplateSource) -> anyhow::Result<Self> {
        if source.len() > MAX_TEMPLATE_BYTES {
            bail!(
                "the chat template is {} bytes long; templates over {} bytes are refused",
                source.len(),
                MAX_TEMPLATE_BYTES
            );
        }
        let tool_format = ToolFormat::of_template(source);
        let source = compat::rewrite_generation_tags(source).into_owned();
        let mut env = Environment::new();
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| anyhow!("configuring the template syntax failed: {e}"))?;
        env.set_syntax(syntax);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_formatter(compat::python_formatter);
        env.set_recursion_limit(RECURSION_LIMIT);
        env.set_unknown_method_callback(limits::method_callback);
        minijinja_contrib::add_to_environment(&mut env);
        env.add_filter("tojson", json::tojson);
        // Pretty-printing nested values writes output quadratic in their depth before any
        // fuel is charged; no chat template needs it.
        env.remove_filter("pprint");
        env.add_function("raise_exception", compat::raise_exception);
        env.add_test("iterable", compat::is_iterable);
        env.add_function("strftime_now", |format: String| {
            compat::strftime_now(&format)
        });
        env.add_template_owned(TEMPLATE_NAME, source)
            .map_err(|e| anyhow!("the chat template does not compile: {}", describe(&e)))?;
        let notice = match origin {
            TemplateSource::BuiltIn(family) => {
                Some(format!("using the built-in {family} chat template"))
            }
            _ => None,
        };
        Ok(Self {
            env,
            origin,
            notice,
            tool_format,
        })
    }

    /// The tool-call syntax the template teaches the model.
    pub fn tool_format(&self) -> ToolFormat {
        self.tool_format
    }

    pub fn origin(&self) -> &TemplateSource {
        &self.origin
    }

    /// Some(..) when a built-in fallback is in use: a sentence to show the user.
    pub fn notice(&self) -> Option<String> {
        self.notice.clone()
    }

    /// Renders the conversation into prompt text.
    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
        bos_token: &str,
        eos_token: &str,
    ) -> anyhow::Result<String> {
        self.render_with_tools(messages, None, add_generation_prompt, bos_token, eos_token)
    }

    /// Renders the conversation with the tools the model may call (`tools`, in OpenAI's
    /// `{"type": "function", "function": {…}}` shape, as transformers passes them).
    pub fn render_with_tools(
        &self,
        messages: &[Message],
        tools: Option<&[serde_json::Value]>,
        add_generation_prompt: bool,
        bos_token: &str,
        eos_token: &str,
    ) -> anyhow::Result<String> {
        let tool_bytes: usize = tools.map_or(0, |t| t.iter().map(|v| v.to_string().len()).sum());
        let call_bytes: usize = messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .map(|c| c.name.len() + c.arguments.len() + c.id.len())
            .sum();
        let input_bytes: usize = messages.iter().map(|m| m.content.len()).sum::<usize>()
            + tool_bytes
            + call_bytes
            + bos_token.len()
            + eos_token.len();
        let per_message = FUEL_PER_MESSAGE.saturating_mul(messages.len() as u64);
        let fuel = (BASE_FUEL + per_message + input_bytes as u64).min(MAX_FUEL);
        let job = || {
            self.render_here(
                messages,
                tools,
                add_generation_prompt,
                bos_token,
                eos_token,
                fuel,
                input_bytes,
            )
        };
        // Values a template builds can be nested as deeply as its fuel allows, and
        // printing, comparing or dropping them recurses once per level: on an ordinary
        // thread stack that is an abort, not an error. So the render runs on a thread whose
        // stack is big enough for any nesting the fuel can pay for (only the pages actually
        // used are ever backed by memory). If such a thread cannot be made, render here.
        let stack = RENDER_STACK_BASE + fuel as usize * RENDER_STACK_PER_FUEL;
        std::thread::scope(|scope| {
            let spawned = std::thread::Builder::new()
                .name("chat-template".into())
                .stack_size(stack)
                .spawn_scoped(scope, job);
            match spawned {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|_| Err(anyhow!("rendering the chat template panicked"))),
                Err(_) => job(),
            }
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn render_here(
        &self,
        messages: &[Message],
        tools: Option<&[serde_json::Value]>,
        add_generation_prompt: bool,
        bos_token: &str,
        eos_token: &str,
        fuel: u64,
        input_bytes: usize,
    ) -> anyhow::Result<String> {
        // Fuel is a per-environment setting; a clone shares the compiled template (an Arc)
        // and lets the budget grow with the conversation.
        let mut env = self.env.clone();
        env.set_fuel(Some(fuel));
        let template = env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| anyhow!("the chat template is missing: {e}"))?;

        let messages: Vec<Value> = messages.iter().map(message::value).collect();
        // transformers passes tools and documents as None when there are none, so
        // `tools is defined` is true and `tools is none` too; enable_thinking and other
        // optional switches stay undefined.
        let tools = match tools {
            Some(tools) if !tools.is_empty() => Value::from(Serde(tools)),
            _ => Value::from(()),
        };
        let ctx = context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => bos_token,
            eos_token => eos_token,
            tools => tools,
            documents => Value::from(()),
        };
        let limit = BASE_OUTPUT_BYTES
            .saturating_add(input_bytes.saturating_mul(OUTPUT_BYTES_PER_INPUT_BYTE));
        let mut out = CappedWriter {
            buf: Vec::new(),
            limit,
            overflowed: false,
        };
        // The captured state borrows the environment, so it is dropped right here.
        let result = template.render_captured_to(ctx, &mut out).map(drop);
        match result {
            Ok(()) => String::from_utf8(out.buf)
                .map_err(|_| anyhow!("the chat template produced text that is not UTF-8")),
            Err(_) if out.overflowed => bail!(
                "the chat template produced more than {limit} bytes for a {input_bytes}-byte \
                 conversation and was stopped"
            ),
            Err(e) => Err(render_error(&e)),
        }
    }

    /// Whether the rendered prompt already starts with bos_token (so the engine must not
    /// add BOS again).
    pub fn starts_with_bos(rendered: &str, bos_token: &str) -> bool {
        !bos_token.is_empty() && rendered.starts_with(bos_token)
    }
}

fn render_error(e: &minijinja::Error) -> anyhow::Error {
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(raised) = err.downcast_ref::<compat::RaisedByTemplate>() {
            return anyhow!("the chat template rejected the conversation: {raised}");
        }
        source = err.source();
    }
    if e.kind() == ErrorKind::TemplateNotFound {
        // There is no loader: include, import and extends can never find anything.
        return anyhow!(
            "the chat template tries to load another template (include, import or extends), \
             which chat templates cannot do{}",
            location(e)
        );
    }
    if e.kind() == ErrorKind::OutOfFuel {
        return anyhow!(
            "the chat template did too much work and was stopped (it may loop forever){}",
            location(e)
        );
    }
    anyhow!("rendering the chat template failed: {}", describe(e))
}

/// The error's detail and template line, without minijinja's multi-line debug dump.
fn describe(e: &minijinja::Error) -> String {
    let what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    format!("{what}{}", location(e))
}

fn location(e: &minijinja::Error) -> String {
    e.line()
        .map(|line| format!(" (template line {line})"))
        .unwrap_or_default()
}

/// Collects output and refuses to grow past a limit, so a template that writes without end
/// fails at the limit instead of exhausting memory first.
struct CappedWriter {
    buf: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl io::Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len().saturating_add(data.len()) > self.limit {
            self.overflowed = true;
            return Err(io::Error::other("chat template output limit reached"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
