//! The TUI's lifecycle as `update` sees it: submit, tokens, finish, cancel, failure, model
//! switch, regenerate, new conversation. No terminal, no model: messages in, state and
//! effects out.

use crate::tui_support::*;
use crossterm::event::KeyCode;
use taper::chat::{Message, Role};
use taper::engine::EngineCommand;
use taper::protocol::EngineEvent;
use taper::protocol::StopReason;
use taper::tui::state::{AnswerStatus, EntryBody, NoticeLevel, Overlay};
use taper::tui::SessionEffect;
use taper::tui::{Effect, Msg};

fn answers(h: &Harness) -> Vec<(String, String, AnswerStatus)> {
    h.state
        .conversation
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Message {
                message,
                answer: Some(a),
            } => Some((a.model.clone(), message.content.clone(), a.status)),
            _ => None,
        })
        .collect()
}

fn notices(h: &Harness) -> Vec<(NoticeLevel, String)> {
    h.state
        .conversation
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Notice { level, text } => Some((*level, text.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn submitting_sends_the_history_with_a_fresh_turn_id_and_clears_the_input() {
    let mut h = Harness::with_model();
    let request = h.ask("Hello?");
    assert_eq!(request.messages(), vec![Message::user("Hello?")]);
    assert!(!request.is_raw());
    assert_eq!(request.sampling.temperature, 0.0);
    assert_eq!(request.max_tokens, 256);
    assert!(h.state.input.is_empty());
    assert!(h.state.generating());
    assert_eq!(
        answers(&h),
        vec![(SMOL.into(), String::new(), AnswerStatus::Streaming)]
    );
}

#[test]
fn the_system_prompt_goes_first_in_every_request() {
    let mut h = Harness::with_model();
    h.state.settings.system_prompt = "Be brief.".into();
    let request = h.ask("Hi");
    assert_eq!(request.messages()[0], Message::system("Be brief."));
    assert_eq!(request.messages()[1], Message::user("Hi"));
}

#[test]
fn tokens_of_the_active_turn_stream_into_the_answer() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.engine(EngineEvent::PromptProgress {
        turn_id: turn,
        done: 12,
        total: 12,
        cached: 0,
    });
    h.tokens(turn, &["Hel", "lo", "!"]);
    assert_eq!(answers(&h)[0].1, "Hello!");
    assert_eq!(h.state.stats.generated(), Some(3));
    assert!(h.state.stats.decode_tok_s().unwrap() > 0.0);
}

#[test]
fn events_of_a_stale_turn_are_ignored() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.tokens(turn + 7, &["ghost"]);
    h.engine(EngineEvent::PromptProgress {
        turn_id: turn + 7,
        done: 1,
        total: 2,
        cached: 0,
    });
    assert_eq!(answers(&h)[0].1, "");
    assert!(h.state.generating());
}

#[test]
fn finishing_records_the_engines_usage_and_returns_to_idle() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.tokens(turn, &["Hello"]);
    h.finish(turn, usage(20, 0, 11, StopReason::EndOfTurn));
    assert!(!h.state.generating());
    assert_eq!(answers(&h)[0].2, AnswerStatus::Done);
    assert_eq!(h.state.stats.decode_tok_s(), Some(50.0));
    assert_eq!(h.state.stats.context_used(), 31);
    assert_eq!(h.state.stats.rates.back(), Some(&500));
}

#[test]
fn the_next_turn_sends_the_whole_conversation() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.tokens(turn, &["Hello", "!"]);
    h.finish(turn, usage(20, 0, 2, StopReason::EndOfTurn));
    let next = h.ask("How are you?");
    assert_ne!(next.turn_id, turn);
    assert_eq!(
        next.messages(),
        vec![
            Message::user("Hi"),
            Message::assistant("Hello!"),
            Message::user("How are you?")
        ]
    );
}

#[test]
fn enter_while_answering_does_not_send_and_keeps_the_text() {
    let mut h = Harness::with_model();
    h.ask("Hi");
    h.type_text("second");
    let fx = h.send(key(KeyCode::Enter));
    assert!(generate_of(&fx).is_none());
    assert_eq!(h.state.input.text(), "second");
    assert!(h.state.status.as_deref().unwrap_or("").contains("Esc"));
}

#[test]
fn escape_cancels_the_turn_and_keeps_the_partial_answer_marked_stopped() {
    let mut h = Harness::with_model();
    let turn = h.ask("Tell me a story").turn_id;
    h.tokens(turn, &["Once", " upon"]);
    let fx = h.send(key(KeyCode::Esc));
    // Cancelled, and the partial answer saved.
    assert!(matches!(
        fx.as_slice(),
        [Effect::Cancel(t), Effect::Session(SessionEffect::Save { .. }), ..] if *t == turn
    ));
    assert!(!h.state.generating());
    assert_eq!(answers(&h)[0].1, "Once upon");
    assert_eq!(answers(&h)[0].2, AnswerStatus::Stopped);
    // Tokens the engine sent before it saw the cancel do not change the kept text...
    h.tokens(turn, &[" a"]);
    assert_eq!(answers(&h)[0].1, "Once upon");
    // ...and its final usage is still recorded.
    h.finish(turn, usage(10, 0, 3, StopReason::Cancelled));
    assert_eq!(answers(&h)[0].2, AnswerStatus::Stopped);
    assert!(h.state.stats.last.is_some());
}

#[test]
fn a_stopped_answer_is_part_of_the_next_request() {
    let mut h = Harness::with_model();
    let turn = h.ask("Story?").turn_id;
    h.tokens(turn, &["Once"]);
    h.send(key(KeyCode::Esc));
    let next = h.ask("Go on");
    assert_eq!(next.messages()[1], Message::assistant("Once"));
}

#[test]
fn a_failed_generation_is_shown_and_the_app_keeps_running() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.engine(EngineEvent::Failed {
        turn_id: Some(turn),
        message: "tensor shape mismatch".into(),
    });
    assert!(!h.state.generating());
    assert!(!h.state.quit);
    assert_eq!(answers(&h)[0].2, AnswerStatus::Failed);
    // The failed exchange is not sent again; the next question goes alone.
    let next = h.ask("Again");
    assert_eq!(next.messages(), vec![Message::user("Again")]);
}

#[test]
fn a_failed_load_is_shown_as_an_error_and_leaves_no_model() {
    let mut h = Harness::with_model();
    h.send(Msg::Load(entry("broken", "llama", "Q4_0", 10)));
    h.engine(EngineEvent::Failed {
        turn_id: None,
        message: "not a GGUF file".into(),
    });
    let (level, text) = notices(&h).pop().unwrap();
    assert_eq!(level, NoticeLevel::Error);
    assert!(
        text.contains("broken") && text.contains("not a GGUF file"),
        "{text}"
    );
    assert!(h.state.model.loaded.is_none() && h.state.model.loading.is_none());
    h.type_text("Hi");
    let fx = h.send(key(KeyCode::Enter));
    assert!(generate_of(&fx).is_none());
    assert!(h.state.status.as_deref().unwrap_or("").contains("Ctrl+P"));
}

#[test]
fn load_notices_are_shown_in_the_chat() {
    let mut h = Harness::empty();
    h.send(Msg::Load(entry(GEMMA, "gemma3", "Q4_K", 1)));
    h.engine(EngineEvent::Loaded {
        info: info(GEMMA, "gemma3"),
        notices: vec!["no chat template; using the built-in Gemma template".into()],
    });
    let texts: Vec<String> = notices(&h).into_iter().map(|(_, t)| t).collect();
    assert!(
        texts.iter().any(|t| t.contains("built-in Gemma template")),
        "{texts:?}"
    );
}

#[test]
fn switching_model_keeps_the_conversation_and_the_next_answer_is_labelled_with_the_new_model() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.tokens(turn, &["Hello"]);
    h.finish(turn, usage(5, 0, 1, StopReason::EndOfTurn));

    h.state.picker.set_entries(vec![
        entry(SMOL, "llama", "Q4_1", 1),
        entry(GEMMA, "gemma3", "Q4_K", 2),
    ]);
    h.send(ctrl('p'));
    assert_eq!(h.state.overlay, Overlay::Picker);
    h.type_text("gem");
    let fx = h.send(key(KeyCode::Enter));
    let load = fx.iter().find_map(|e| match e {
        Effect::Send(EngineCommand::Load(l)) => Some(l.clone()),
        _ => None,
    });
    assert!(load.unwrap().model_path.ends_with(format!("{GEMMA}.gguf")));
    assert_eq!(h.state.overlay, Overlay::None);

    // The input stays usable while loading; a question asked now is queued behind the load.
    let queued = h.ask("And you?");
    assert_eq!(queued.messages().len(), 3);
    h.engine(EngineEvent::Loaded {
        info: info(GEMMA, "gemma3"),
        notices: vec![],
    });
    let all = answers(&h);
    assert_eq!(all[0], (SMOL.into(), "Hello".into(), AnswerStatus::Done));
    assert_eq!(all[1].0, GEMMA);
    assert_eq!(h.state.model.loaded.as_ref().unwrap().name, GEMMA);
}

#[test]
fn switching_model_mid_answer_cancels_it_first() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.tokens(turn, &["Hel"]);
    h.state
        .picker
        .set_entries(vec![entry(GEMMA, "gemma3", "Q4_K", 2)]);
    h.send(ctrl('p'));
    let fx = h.send(key(KeyCode::Enter));
    assert!(matches!(fx[0], Effect::Cancel(t) if t == turn));
    assert!(matches!(fx[1], Effect::Send(EngineCommand::Load(_))));
    assert_eq!(answers(&h)[0].2, AnswerStatus::Stopped);
}

#[test]
fn regenerate_keeps_the_last_answer_as_a_sibling_and_resends_the_history() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.tokens(turn, &["Hello"]);
    h.finish(turn, usage(5, 0, 1, StopReason::EndOfTurn));
    let fx = h.send(ctrl('r'));
    let again = generate_of(&fx).expect("regenerate sends a request");
    assert_eq!(again.messages(), vec![Message::user("Hi")]);
    assert_ne!(again.turn_id, turn);
    let all = answers(&h);
    assert_eq!(all.len(), 1, "the path shows only the new answer");
    assert_eq!(all[0].2, AnswerStatus::Streaming);
    assert_eq!(
        h.state.conversation.message_count(),
        3,
        "the old one is kept"
    );
}

#[test]
fn regenerate_with_nothing_to_answer_says_so() {
    let mut h = Harness::with_model();
    let fx = h.send(ctrl('r'));
    assert!(generate_of(&fx).is_none());
    assert!(h.state.status.is_some());
}

#[test]
fn new_conversation_clears_the_history_and_cancels_any_answer() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    let fx = h.send(ctrl('n'));
    // The conversation as it stood is saved before it goes.
    assert!(matches!(
        fx.as_slice(),
        [Effect::Cancel(t), Effect::Session(SessionEffect::Save { .. }), ..] if *t == turn
    ));
    assert!(h.state.conversation.entries.is_empty());
    let next = h.ask("Fresh start");
    assert_eq!(next.messages(), vec![Message::user("Fresh start")]);
}

#[test]
fn pasting_multi_line_text_inserts_it_without_sending() {
    let mut h = Harness::with_model();
    let fx = h.send(Msg::Paste("line one\r\nline two\n".into()));
    assert!(fx.is_empty());
    assert_eq!(h.state.input.text(), "line one\nline two\n");
    assert!(!h.state.generating());
}

#[test]
fn alt_enter_adds_a_line_and_enter_sends_all_lines() {
    let mut h = Harness::with_model();
    h.type_text("one");
    h.send(alt(KeyCode::Enter));
    h.type_text("two");
    let request = generate_of(&h.send(key(KeyCode::Enter))).unwrap();
    assert_eq!(request.messages(), vec![Message::user("one\ntwo")]);
}

#[test]
fn up_on_an_empty_input_recalls_earlier_prompts_and_down_comes_back() {
    let mut h = Harness::with_model();
    for (i, q) in ["first", "second"].iter().enumerate() {
        let turn = h.ask(q).turn_id;
        h.finish(turn, usage(5, 0, 1, StopReason::EndOfTurn));
        assert_eq!(h.state.input.history().len(), i + 1);
    }
    h.send(key(KeyCode::Up));
    assert_eq!(h.state.input.text(), "second");
    h.send(key(KeyCode::Up));
    assert_eq!(h.state.input.text(), "first");
    h.send(key(KeyCode::Down));
    assert_eq!(h.state.input.text(), "second");
    h.send(key(KeyCode::Down));
    assert_eq!(h.state.input.text(), "");
}

#[test]
fn sampling_settings_edited_while_chatting_apply_to_the_next_request() {
    let mut h = Harness::with_model();
    h.send(ctrl('s'));
    assert_eq!(h.state.overlay, Overlay::Settings);
    h.send(key(KeyCode::Down)); // temperature
    h.send(key(KeyCode::Enter));
    h.send(ctrl('u'));
    h.type_text("1.5");
    h.send(key(KeyCode::Enter));
    assert_eq!(h.state.settings.sampling.temperature, 1.5);
    // A bad value is refused with what is expected, and the edit stays open.
    h.send(key(KeyCode::Down)); // top-p
    h.send(key(KeyCode::Enter));
    h.send(ctrl('u'));
    h.type_text("7");
    h.send(key(KeyCode::Enter));
    assert!(h.state.form.error.as_deref().unwrap().contains("0 to 1"));
    h.send(key(KeyCode::Esc)); // cancel the edit
    h.send(key(KeyCode::Esc)); // close
    assert_eq!(h.state.overlay, Overlay::None);
    let request = h.ask("Hi");
    assert_eq!(request.sampling.temperature, 1.5);
    assert_eq!(request.sampling.top_p, 0.95);
}

#[test]
fn the_system_prompt_can_be_edited_while_chatting() {
    let mut h = Harness::with_model();
    h.send(ctrl('s'));
    h.send(key(KeyCode::Enter));
    h.type_text("You are a pirate.");
    h.send(key(KeyCode::Enter));
    h.send(key(KeyCode::Esc));
    let request = h.ask("Hi");
    assert_eq!(request.messages()[0].role, Role::System);
    assert_eq!(request.messages()[0].content, "You are a pirate.");
}

#[test]
fn quitting_works_mid_answer_and_mid_load() {
    let mut h = Harness::with_model();
    h.ask("Hi");
    h.send(ctrl('q'));
    assert!(h.state.quit);
    let mut h = Harness::empty();
    h.send(Msg::Load(entry(GEMMA, "gemma3", "Q4_K", 1)));
    h.send(ctrl('c'));
    assert!(h.state.quit);
}

#[test]
fn the_engine_stopping_is_shown_and_nothing_more_is_sent() {
    let mut h = Harness::with_model();
    h.ask("Hi");
    h.send(Msg::EngineStopped);
    assert!(!h.state.generating());
    assert_eq!(notices(&h).last().unwrap().0, NoticeLevel::Error);
    h.type_text("again");
    assert!(generate_of(&h.send(key(KeyCode::Enter))).is_none());
}

#[test]
fn scrolling_up_stops_following_and_reaching_the_bottom_follows_again() {
    let mut h = Harness::with_model();
    h.state.viewport = taper::tui::state::Viewport {
        total_lines: 100,
        height: 20,
    };
    h.send(key(KeyCode::PageUp));
    assert!(!h.state.scroll.follow);
    assert_eq!(h.state.scroll.top, 62);
    h.send(Msg::Wheel(-1));
    assert_eq!(h.state.scroll.top, 59);
    h.send(key(KeyCode::PageDown));
    h.send(key(KeyCode::PageDown));
    assert!(h.state.scroll.follow);
    h.send(key(KeyCode::PageUp));
    h.send(key(KeyCode::End));
    assert!(h.state.scroll.follow);
}

#[test]
fn regenerating_after_a_model_switch_answers_with_the_new_model() {
    let mut h = Harness::with_model();
    let turn = h.ask("Hi").turn_id;
    h.tokens(turn, &["Hello"]);
    h.finish(turn, usage(5, 0, 1, StopReason::EndOfTurn));
    h.send(Msg::Load(entry(GEMMA, "gemma3", "Q4_K", 2)));
    h.engine(EngineEvent::Loaded {
        info: info(GEMMA, "gemma3"),
        notices: vec![],
    });
    let again = generate_of(&h.send(ctrl('r'))).expect("regenerate sends a request");
    assert_eq!(again.messages(), vec![Message::user("Hi")]);
    let all = answers(&h);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].0, GEMMA);
    // The switch notice stays in the chat.
    assert!(notices(&h).iter().any(|(_, t)| t.contains("Switched to")));
}

#[test]
fn a_question_sent_while_the_first_model_loads_is_answered_by_it_after_a_plain_load_notice() {
    let mut h = Harness::empty();
    h.send(Msg::Load(entry(SMOL, "llama", "Q4_1", 1)));
    let turn = h.ask("Hi").turn_id;
    h.engine(EngineEvent::Loaded {
        info: info(SMOL, "llama"),
        notices: vec![],
    });
    let texts: Vec<String> = notices(&h).into_iter().map(|(_, t)| t).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with(&format!("Loaded {SMOL}"))),
        "{texts:?}"
    );
    assert!(!texts.iter().any(|t| t.contains("Switched")), "{texts:?}");
    h.tokens(turn, &["Hello"]);
    h.finish(turn, usage(5, 0, 1, StopReason::EndOfTurn));
    assert_eq!(
        answers(&h),
        vec![(SMOL.to_string(), "Hello".to_string(), AnswerStatus::Done)]
    );
}

/// The panel's figures mid-answer are the turn's own, and equal to what it ends with: cached
/// tokens from the first progress event (not the last turn's), the context without the answer
/// being regenerated, the engine's own time to first token and prompt rate (no jump at the
/// end), and a new model's panel without the old one's rates.
#[test]
fn the_panels_figures_are_right_at_every_frame_of_an_answer() {
    let mut h = Harness::with_model();
    let first = h.ask("Hi").turn_id;
    h.tokens(first, &["Hello", " there"]);
    h.finish(first, usage(40, 0, 20, StopReason::EndOfTurn));
    assert_eq!(h.state.stats.cached(), Some(0));
    assert_eq!(h.state.stats.context_used(), 60);

    let turn = h.ask("And then?").turn_id;
    assert_eq!(h.state.stats.cached(), None, "not the last turn's figure");
    h.engine(EngineEvent::PromptProgress {
        turn_id: turn,
        done: 0,
        total: 12,
        cached: 60,
    });
    assert_eq!(h.state.stats.cached(), Some(60));
    assert_eq!(h.state.stats.context_used(), 72);
    h.tokens(turn, &["So"]);
    h.engine(EngineEvent::FirstToken {
        turn_id: turn,
        ttft_s: 0.08,
        prefill_s: 0.05,
    });
    h.tokens(turn, &[" it", " goes"]);
    let live = (
        h.state.stats.ttft_s(),
        h.state.stats.prompt_tok_s(),
        h.state.stats.context_used(),
    );
    assert_eq!(live, (Some(0.08), Some(12.0 / 0.05), 75));
    h.finish(turn, usage(72, 60, 3, StopReason::EndOfTurn));
    let done = (
        h.state.stats.ttft_s(),
        h.state.stats.prompt_tok_s(),
        h.state.stats.context_used(),
    );
    assert_eq!(done, live, "the figures do not jump when the answer ends");

    // Regenerating: the context holds the prompt again, not the answer it replaces.
    let fx = h.send(ctrl('r'));
    let again = generate_of(&fx).expect("a request").turn_id;
    h.engine(EngineEvent::PromptProgress {
        turn_id: again,
        done: 0,
        total: 0,
        cached: 72,
    });
    assert_eq!(h.state.stats.context_used(), 72);

    // Another model: its panel starts without the old model's decode rates.
    h.finish(again, usage(72, 72, 2, StopReason::EndOfTurn));
    assert!(!h.state.stats.rates.is_empty());
    let mut info = h.state.model.loaded.clone().unwrap();
    info.name = "other".into();
    h.engine(EngineEvent::Loaded {
        info,
        notices: Vec::new(),
    });
    assert!(h.state.stats.rates.is_empty());
    assert_eq!(h.state.stats.decode_tok_s(), None);
}
