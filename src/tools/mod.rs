//! Tool calls in each model family's own syntax: which syntax a model speaks, the grammar that
//! holds its calls to it, and reading calls back out of an answer.
//!
//! - [`ToolFormat`]: which syntax a model's chat template teaches it, found from the template.
//! - [`parse`]: an answer's text turned into prose and OpenAI tool calls, whole or streamed.
//! - [`grammar`]: the constraint that makes a call valid by construction.
//! - [`generic`]: tools for templates that know none, described in the system message.
//!
//! The tools themselves ([`crate::protocol::ToolSet`]) cross the engine's boundary with a
//! request; this module is what the engine and its clients share about their syntax.

pub mod format;
pub mod generic;
pub mod grammar;
pub mod parse;

pub use format::ToolFormat;
