//! Drafting with a second model on the real models: the same greedy ids with a draft model
//! that guesses differently from the model (SmolLM2 cut to its first layers: an early-exit
//! draft with the same vocabulary), every draft kept when a model drafts for itself, a draft
//! of another vocabulary refused, sampled answers from the same distribution, and the engine
//! host drafting with the draft model it was loaded with (a bad one fails the request that
//! wants it, clearly, and nothing else).

use crate::common;
use crate::gguf_copy;
use crate::speculative::{
    assert_same_distribution, greedy, hosted, request, same_greedy_answers,
    sampled_prefixes_drafted, Local,
};

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use taper::engine::generation::TurnOptions;
use taper::engine::model::CacheOptions;
use taper::engine::speculative::{draft_model, DraftMemory, Drafter, SharedDraft};
use taper::engine::EngineCommand;
use taper::protocol::{EngineEvent, Speculation};

/// The longest draft the drafter makes.
const LONGEST_DRAFT: usize = 8;

/// Layers SmolLM2's early-exit draft keeps, of its 30.
const DRAFT_LAYERS: u32 = 12;

/// SmolLM2 with its first [`DRAFT_LAYERS`] layers, written once per test process.
fn early_exit_draft() -> &'static Path {
    static DRAFT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, path) = DRAFT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smollm2-early-exit.gguf");
        gguf_copy::first_layers(&common::real_model(common::SMOLLM2), DRAFT_LAYERS, &path);
        (dir, path)
    });
    path
}

fn open_draft(path: &Path, target: &Local) -> SharedDraft {
    draft_model::open(path, &target.text, CacheOptions::new(1024)).unwrap()
}

fn drafter(draft: &SharedDraft) -> Option<Drafter> {
    Some(Drafter::model(
        draft.clone(),
        DraftMemory::new(draft).unwrap(),
    ))
}

#[test]
fn greedy_ids_are_the_same_with_an_early_exit_draft_model() {
    let mut local = Local::open(common::SMOLLM2, 1024);
    let draft = open_draft(early_exit_draft(), &local);
    let usages = same_greedy_answers(&mut local, "early exit", 64, || drafter(&draft));
    let drafted: usize = usages.iter().map(|(_, fast)| fast.drafted_tokens).sum();
    let kept: usize = usages.iter().map(|(_, fast)| fast.accepted_tokens).sum();
    // The draft guesses like the model often and unlike it sometimes: both the keeping and
    // the rejecting side of verification ran.
    assert!(kept > 0, "no draft kept of {drafted}");
    assert!(kept < drafted, "every one of {drafted} drafts kept");
}

#[test]
fn a_model_drafting_for_itself_has_every_draft_kept() {
    let mut local = Local::open(common::GEMMA3, 1024);
    let path = common::real_model(common::GEMMA3);
    let draft = open_draft(&path, &local);
    let options = TurnOptions {
        sampling: greedy(),
        max_tokens: 48,
        stop_at_end_of_turn: true,
    };
    for question in ["Why is the sky blue?", "Count from 1 to 20."] {
        let prompt = local.ids(question);
        let plain = local.answer_drafted(&prompt, &options, None);
        let fast = local.answer_drafted(&prompt, &options, drafter(&draft));
        assert_eq!(plain.ids, fast.ids, "{question:?}");
        let u = &fast.usage;
        // The same logits both ways (batch invariance): every confident guess is the argmax,
        // and only the last pass loses drafts, those past the answer's end (at most a whole
        // draft of LONGEST_DRAFT).
        assert!(u.drafted_tokens > 0, "{question:?}: nothing drafted");
        let lost = u.drafted_tokens - u.accepted_tokens;
        assert!(
            lost <= LONGEST_DRAFT,
            "{question:?}: {lost} drafts not kept"
        );
        assert!(u.decode_passes < plain.usage.decode_passes, "{question:?}");
    }
}

#[test]
fn a_draft_model_with_another_vocabulary_is_refused() {
    let local = Local::open(common::SMOLLM2, 256);
    let gemma = common::real_model(common::GEMMA3);
    let err = draft_model::open(&gemma, &local.text, CacheOptions::new(256))
        .err()
        .expect("a Gemma draft for SmolLM2 is refused");
    let message = format!("{err:#}");
    assert!(message.contains("draft model"), "{message}");
    assert!(message.contains("share the model's tokenizer"), "{message}");
}

/// Sampled answers with the early-exit draft's guesses come from the model's distribution
/// (the acceptance rule itself is checked exactly by the sampler's unit tests).
#[test]
fn sampled_answers_keep_the_model_distribution_with_a_draft_model() {
    let mut local = Local::open(common::SMOLLM2, 512);
    let draft = open_draft(early_exit_draft(), &local);
    let prompt = local.ids("Repeat exactly: one two three one two three one two three");
    let runs = 300;
    let plain = sampled_prefixes_drafted(&mut local, &prompt, 0, runs, || None);
    let fast = sampled_prefixes_drafted(&mut local, &prompt, 1 << 32, runs, || drafter(&draft));
    assert_same_distribution(&plain, &fast);
}

#[test]
fn the_host_drafts_with_the_draft_model_it_was_loaded_with() {
    let draft = early_exit_draft().to_path_buf();
    let mut engine = crate::real::engine_drafting(common::SMOLLM2, 1024, Some(draft));
    let question = "List the days of the week, then list them again in the same order.";
    let (plain_text, plain) = hosted(&mut engine, request(1, question, 80, Speculation::Off));
    let (fast_text, fast) = hosted(&mut engine, request(2, question, 80, Speculation::Draft));
    assert_eq!(plain_text, fast_text);
    assert_eq!(plain.generated_tokens, fast.generated_tokens);
    assert_eq!(plain.drafted_tokens, 0);
    assert!(fast.drafted_tokens > 0, "{fast:?}");
    // Again: the draft model's cache from the last request is reused, and the answer stays.
    let (again_text, again) = hosted(&mut engine, request(3, question, 80, Speculation::Draft));
    assert_eq!(again_text, plain_text);
    assert!(again.drafted_tokens > 0);
}

#[test]
fn a_missing_draft_model_fails_the_request_that_wants_it_and_nothing_else() {
    let missing = PathBuf::from("/nonexistent/draft.gguf");
    let mut engine = crate::real::engine_drafting(common::SMOLLM2, 512, Some(missing));
    let question = "What is 17 times 3?";
    engine
        .send(EngineCommand::Generate(request(
            1,
            question,
            16,
            Speculation::Draft,
        )))
        .unwrap();
    let message = loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Failed { message, .. }) => break message,
            Some(EngineEvent::Finished { .. }) => panic!("a missing draft model went unnoticed"),
            Some(_) => {}
            None => panic!("the engine stopped"),
        }
    };
    assert!(message.contains("draft model"), "{message}");
    assert!(message.contains("/nonexistent/draft.gguf"), "{message}");
    let (text, usage) = hosted(&mut engine, request(2, question, 16, Speculation::Off));
    assert!(!text.is_empty());
    assert_eq!(usage.drafted_tokens, 0);
}
