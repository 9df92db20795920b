//! The types that cross the engine's boundary, and nothing else: what a client asks
//! ([`LoadRequest`], [`GenerateRequest`], [`SamplingParams`], [`CacheType`]), what it hears
//! ([`EngineEvent`], [`ModelInfo`], [`Usage`]) and how a turn reports ([`TurnObserver`]).
//!
//! A leaf: it imports only `chat` (messages) and `stats` (rates). The config, saved sessions,
//! remote servers and every front end depend on it rather than on the engine's insides.

mod event;
mod request;
pub mod sampling;
mod speculation;
mod tools;
mod usage;

pub use event::{EngineEvent, ModelInfo, TokenCounter, TurnObserver};
pub use request::{Constraint, GenerateRequest, LoadRequest, Prompt};
pub use sampling::{CacheType, Range, SamplingParams};
pub use speculation::Speculation;
pub use tools::{Tool, ToolChoice, ToolSet};
pub use usage::{ServerFigures, StopReason, Usage};
