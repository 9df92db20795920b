//! A 200-turn conversation with SmolLM2 in a 512-token context, driven through the TUI's own
//! path (its `update` builds every request, the real engine worker answers), so the history
//! overflows many times over. After every turn: no failure, the prompt and the answer fit the
//! context, the cached prefix (the previous prompt and the previous answer) is reused, and the
//! process's resident memory is recorded; at the end the memory must be flat (it is memory
//! that is bounded here, never time).

use crate::common;

use crate::tui_support::{generate_of, key};
use crossterm::event::KeyCode;
use std::time::{Duration, Instant};
use taper::engine::EngineHandle;
use taper::protocol::EngineEvent;
use taper::protocol::SamplingParams;
use taper::protocol::{StopReason, Usage};
use taper::stats::current_rss_bytes;
use taper::tui::state::{AnswerStatus, Settings};
use taper::tui::{scan, update, Effect, Msg, State};

const TURNS: usize = 200;
const CONTEXT: usize = 512;
const MAX_TOKENS: usize = 8;
/// Memory is compared from this turn on: by then the cache and the allocator have warmed up.
const BASELINE_TURN: usize = 20;
/// The most the resident memory may grow from the baseline turn to the last.
const FLAT_BOUND: u64 = 32 * 1024 * 1024;
/// Generous: a stuck engine fails the test instead of hanging it.
const EVENT_TIMEOUT: Duration = Duration::from_secs(120);
const SYSTEM: &str = "You are a helpful assistant. Answer in one short sentence.";

const TOPICS: [&str; 10] = [
    "the moon",
    "rivers",
    "bread",
    "volcanoes",
    "owls",
    "glass",
    "the violin",
    "winter",
    "bridges",
    "honey",
];

/// The scripted user messages: varied, of realistic length, never the same twice.
fn question(turn: usize) -> String {
    let topic = TOPICS[turn % TOPICS.len()];
    match turn % 3 {
        0 => format!("Turn {turn}: one fact about {topic}?"),
        1 => format!("Turn {turn}: why do people like {topic}?"),
        _ => format!("Turn {turn}: describe {topic} in a few words."),
    }
}

/// The next engine event, or a clear failure when none comes.
fn next_event(engine: &mut EngineHandle) -> EngineEvent {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        match engine.events.try_recv() {
            Ok(event) => return event,
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                panic!("the engine worker stopped")
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                assert!(
                    Instant::now() < deadline,
                    "no engine event for {EVENT_TIMEOUT:?}"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Carries out the effects as the app does: commands go to the engine, saves to the sessions
/// directory (after every answer, so the save is part of what must stay flat).
fn carry_out(engine: &EngineHandle, effects: Vec<Effect>) {
    for effect in effects {
        match effect {
            Effect::Send(command) => engine.send(command).expect("the engine takes commands"),
            Effect::Cancel(turn_id) => engine.cancel(turn_id),
            Effect::Session(save) => {
                taper::tui::app::files::perform(save);
            }
            Effect::ScanModels | Effect::Redraw => {}
            other => panic!("unexpected effect in a chat: {other:?}"),
        }
    }
}

/// One turn's figures.
struct Turn {
    turn: usize,
    rss: u64,
    messages_sent: usize,
    usage: Usage,
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[test]
fn two_hundred_turns_stay_in_the_context_reuse_the_cache_and_keep_memory_flat() {
    // Alone: its memory figures are this process's, and the tmux tests' models compete for
    // the same two cores and memory.
    let _serial = crate::tui_support::serial();
    let path = common::real_model(common::SMOLLM2);
    let settings = Settings {
        system_prompt: SYSTEM.to_string(),
        sampling: SamplingParams {
            temperature: 0.0,
            ..SamplingParams::default()
        },
        max_tokens: MAX_TOKENS,
        tool_choice: Default::default(),
        speculation: Default::default(),
    };
    let mut state = State::new(settings, CONTEXT, common::models_dir(), Instant::now());
    let data = tempfile::tempdir().expect("a temporary data directory");
    state.session.dir = data.path().join("sessions");
    let mut engine = EngineHandle::spawn().expect("the engine starts");

    // Load as the app does at start with `-m`.
    let fx = update(&mut state, Msg::Load(scan::describe(&path)), Instant::now());
    carry_out(&engine, fx);
    while state.model.loading.is_some() {
        let event = next_event(&mut engine);
        if let EngineEvent::Failed { message, .. } = &event {
            panic!("the load failed: {message}");
        }
        let fx = update(&mut state, Msg::Engine(event), Instant::now());
        carry_out(&engine, fx);
    }
    let context = state.model.loaded.as_ref().expect("loaded").context_size;
    assert_eq!(context, CONTEXT);

    let started = Instant::now();
    let mut turns: Vec<Turn> = Vec::with_capacity(TURNS);
    // Turns that reused the whole previous prompt.
    let mut whole_reuse = 0;
    eprintln!(
        "turn   rss_MiB  sent  prompt  cached  dropped  generated  prefill_ms  decode_ms  stop"
    );
    for turn in 1..=TURNS {
        // The person types the question and presses Enter.
        state.input.set_text(&question(turn));
        let fx = update(&mut state, key(KeyCode::Enter), Instant::now());
        let request = generate_of(&fx).expect("Enter sends the question");
        let (turn_id, messages_sent) = (request.turn_id, request.messages().len());
        assert_eq!(request.max_tokens, MAX_TOKENS);
        carry_out(&engine, fx);

        let usage = loop {
            let event = next_event(&mut engine);
            let finished = match &event {
                EngineEvent::Finished {
                    turn_id: t, usage, ..
                } if *t == turn_id => Some(usage.clone()),
                EngineEvent::Failed { message, .. } => panic!("turn {turn} failed: {message}"),
                _ => None,
            };
            let fx = update(&mut state, Msg::Engine(event), Instant::now());
            carry_out(&engine, fx);
            if let Some(usage) = finished {
                break usage;
            }
        };
        let (_, answer) = state.conversation.answer(turn_id).expect("the answer");
        assert_eq!(answer.status, AnswerStatus::Done, "turn {turn}");
        assert!(!state.generating(), "turn {turn} still generating");

        // Never overflowing: the prompt left room for the answer, and both fit.
        assert!(
            matches!(
                usage.stop,
                Some(StopReason::EndOfTurn | StopReason::MaxTokens)
            ),
            "turn {turn} stopped with {:?}",
            usage.stop
        );
        assert_eq!(usage.context_size, CONTEXT);
        assert!(
            usage.prompt_tokens + MAX_TOKENS <= CONTEXT,
            "turn {turn}: a prompt of {} tokens leaves no room for {MAX_TOKENS}",
            usage.prompt_tokens
        );
        assert!(usage.context_used() <= CONTEXT, "turn {turn}: {usage:?}");
        assert!(
            usage.generated_tokens <= MAX_TOKENS,
            "turn {turn}: {usage:?}"
        );

        // The cache is reused: everything up to the last question while no turn was left out
        // since the previous one; at least the system prompt's tokens when one was.
        if let Some(previous) = turns.last() {
            let same_window = usage.dropped_messages == previous.usage.dropped_messages;
            if same_window {
                whole_reuse += 1;
                // The previous answer too: every token of it the KV cache holds (the last of
                // max_tokens was sampled but never fed).
                let fed = match previous.usage.stop {
                    Some(StopReason::EndOfTurn) => previous.usage.generated_tokens,
                    _ => previous.usage.generated_tokens.saturating_sub(1),
                };
                assert_eq!(
                    usage.cached_tokens,
                    previous.usage.prompt_tokens + fed,
                    "turn {turn}: the previous prompt ({}) and answer ({fed} tokens fed) \
                     should all be reused",
                    previous.usage.prompt_tokens
                );
            } else {
                assert!(usage.cached_tokens > 0, "turn {turn}: nothing reused");
            }
        }

        let rss = current_rss_bytes().expect("VmRSS is readable on Linux");
        eprintln!(
            "{turn:>4}  {:>8.1}  {messages_sent:>4}  {:>6}  {:>6}  {:>7}  {:>9}  {:>10.0}  {:>9.0}  {:?}",
            mib(rss),
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.dropped_messages,
            usage.generated_tokens,
            usage.prefill_s * 1000.0,
            usage.decode_s * 1000.0,
            usage.stop.unwrap_or(StopReason::EndOfTurn),
        );
        turns.push(Turn {
            turn,
            rss,
            messages_sent,
            usage,
        });
    }
    let elapsed = started.elapsed();

    // The history did overflow, many times: the test exercised dropping, not just appending.
    let last = turns.last().expect("turns ran");
    assert!(
        last.usage.dropped_messages > TURNS,
        "only {} messages were left out by turn {TURNS}",
        last.usage.dropped_messages
    );
    assert!(
        last.messages_sent > 2 * TURNS - 10,
        "the TUI sends the whole history"
    );
    // Leaving out old turns must not cost the cache on every turn after the first overflow.
    assert!(
        whole_reuse >= TURNS / 2,
        "only {whole_reuse} of {TURNS} turns reused the whole previous prompt"
    );

    // The saved session holds every turn, though the model saw only the newest ones.
    let saved: Vec<_> = std::fs::read_dir(&state.session.dir)
        .expect("the session was saved")
        .flatten()
        .collect();
    assert_eq!(saved.len(), 1, "one conversation, one file");
    let bytes = std::fs::read(saved[0].path()).expect("the session file reads");
    let session = taper::sessions::format::parse_session(&bytes).expect("the session parses");
    assert_eq!(
        session.messages.len(),
        2 * TURNS,
        "every question and answer is saved"
    );

    let base = &turns[BASELINE_TURN - 1];
    let growth = last.rss.saturating_sub(base.rss);
    let peak = turns.iter().map(|t| t.rss).max().unwrap_or(0);
    let computed: usize = turns
        .iter()
        .map(|t| t.usage.prompt_tokens - t.usage.cached_tokens)
        .sum();
    let reused: usize = turns.iter().map(|t| t.usage.cached_tokens).sum();
    eprintln!(
        "summary: {TURNS} turns in {:.1} s; RSS turn {} {:.1} MiB, turn {} {:.1} MiB \
         (growth {:.2} MiB), highest {:.1} MiB; prompt tokens computed {computed}, reused {reused}; \
         {whole_reuse} turns reused the whole previous prompt",
        elapsed.as_secs_f64(),
        base.turn,
        mib(base.rss),
        last.turn,
        mib(last.rss),
        mib(growth),
        mib(peak),
    );
    assert!(
        growth < FLAT_BOUND,
        "resident memory grew by {:.1} MiB from turn {BASELINE_TURN} to turn {TURNS}",
        mib(growth)
    );
}
