//! Helpers for the TUI tests: a state with a loaded model, keys, engine events, usage.
#![allow(dead_code)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use taper::engine::EngineCommand;
use taper::protocol::SamplingParams;
use taper::protocol::{EngineEvent, GenerateRequest, ModelInfo};
use taper::protocol::{StopReason, Usage};
use taper::tui::state::{ModelEntry, Settings};
use taper::tui::{update, Effect, Msg, State};

pub const SMOL: &str = "SmolLM2-135M-Instruct.Q4_1";
pub const GEMMA: &str = "gemma-3-270m-q4_k_m";

/// One model-running tmux test at a time, across the modules of this binary (e2e, abuse): the
/// machine may have two cores, and the model wants them.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A test clock: every call to `tick` is 100 ms later.
pub struct Clock {
    pub start: Instant,
    pub now: Instant,
}

impl Clock {
    pub fn new() -> Self {
        let start = Instant::now();
        Self { start, now: start }
    }
    pub fn tick(&mut self) -> Instant {
        self.now += Duration::from_millis(100);
        self.now
    }
}

pub fn settings() -> Settings {
    Settings {
        system_prompt: String::new(),
        sampling: SamplingParams {
            temperature: 0.0,
            ..SamplingParams::default()
        },
        max_tokens: 256,
        tool_choice: Default::default(),
        speculation: Default::default(),
    }
}

pub fn info(name: &str, arch: &str) -> ModelInfo {
    ModelInfo {
        path: PathBuf::from(format!("/models/{name}.gguf")),
        name: name.to_string(),
        architecture: arch.to_string(),
        quantization: "Q4_1".to_string(),
        file_size: 98_362_432,
        parameters: 134_515_008,
        context_size: 4096,
        cache_type: taper::protocol::CacheType::F16,
        // SmolLM2's: 30 layers × K and V × 3 KV heads × 64 values × 2 bytes × 4096 positions.
        cache_bytes: 94_371_840,
        context_length: 8192,
        load_s: 0.27,
        threads: 2,
        kernels: "avx2",
        remote: None,
        tokens: Default::default(),
        kept_loaded: false,
        resident: vec![],
        draft_model: None,
    }
}

pub fn entry(name: &str, arch: &str, quant: &str, size: u64) -> ModelEntry {
    ModelEntry {
        architecture: arch.to_string(),
        quantization: quant.to_string(),
        file_size: size,
        parameters: size * 2,
        ..ModelEntry::from_path(PathBuf::from(format!("/models/{name}.gguf")))
    }
}

pub fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub fn alt(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::ALT))
}

pub fn usage(prompt: usize, cached: usize, generated: usize, stop: StopReason) -> Usage {
    Usage {
        prompt_tokens: prompt,
        cached_tokens: cached,
        prefill_s: 0.05,
        ttft_s: 0.08,
        generated_tokens: generated,
        decode_s: (generated.saturating_sub(1)) as f64 / 50.0,
        dropped_messages: 0,
        context_size: 4096,
        stop: Some(stop),
        server: None,
        grammar_s: 0.0,
        ..Usage::default()
    }
}

/// A test harness: the state, a clock, and every effect the updates returned.
pub struct Harness {
    pub state: State,
    pub clock: Clock,
    pub effects: Vec<Effect>,
}

impl Harness {
    /// A state with SmolLM2 loaded and nothing said yet.
    pub fn with_model() -> Self {
        let mut h = Self::empty();
        h.send(Msg::Load(entry(SMOL, "llama", "Q4_1", 98_362_432)));
        h.engine(EngineEvent::Loaded {
            info: info(SMOL, "llama"),
            notices: vec![],
        });
        h.effects.clear();
        h
    }

    pub fn empty() -> Self {
        let clock = Clock::new();
        let state = State::new(settings(), 4096, PathBuf::from("/models"), clock.now);
        Self {
            state,
            clock,
            effects: Vec::new(),
        }
    }

    pub fn send(&mut self, msg: Msg) -> Vec<Effect> {
        let now = self.clock.tick();
        let fx = update(&mut self.state, msg, now);
        self.effects.extend(fx.iter().cloned());
        fx
    }

    pub fn engine(&mut self, event: EngineEvent) -> Vec<Effect> {
        self.send(Msg::Engine(event))
    }

    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.send(key(KeyCode::Char(c)));
        }
    }

    /// Types `text` and presses Enter; returns the generate request sent.
    pub fn ask(&mut self, text: &str) -> GenerateRequest {
        self.type_text(text);
        let fx = self.send(key(KeyCode::Enter));
        generate_of(&fx).expect("Enter should send a generate request")
    }

    pub fn tokens(&mut self, turn_id: u64, pieces: &[&str]) {
        for p in pieces {
            self.engine(EngineEvent::Token {
                turn_id,
                text: p.to_string(),
            });
        }
    }

    pub fn finish(&mut self, turn_id: u64, usage: Usage) {
        self.engine(EngineEvent::Finished {
            turn_id,
            usage,
            tool_calls: Vec::new(),
        });
    }
}

pub fn generate_of(fx: &[Effect]) -> Option<GenerateRequest> {
    fx.iter().find_map(|e| match e {
        Effect::Send(EngineCommand::Generate(g)) => Some(g.clone()),
        _ => None,
    })
}

pub mod tmux;
