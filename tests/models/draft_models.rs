//! Draft models from the command line: `--speculative draft=MODEL` and a `[draft_models]`
//! pair in the config draft (the stats line shows drafts made), `--speculative draft` with no
//! draft model named is refused before any load, and a draft model of another vocabulary is
//! refused with the reason.

use crate::common;
use std::path::Path;
use std::process::{Command, Output};

/// `taper ask` greedy on SmolLM2 with `extra` flags, `home` as TAPER_HOME.
fn ask(home: &Path, extra: &[&str]) -> Output {
    let model = common::real_model(common::SMOLLM2);
    Command::new(env!("CARGO_BIN_EXE_taper"))
        .args(["ask", "--stats", "--temperature", "0", "-n", "40", "-m"])
        .arg(model)
        .args(extra)
        .arg("List the days of the week, then list them again in the same order.")
        .env("TAPER_HOME", home)
        .output()
        .expect("taper runs")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// The drafts made, from `--stats`' "drafts K/N kept" (0 when the line has none).
fn drafted(stats: &str) -> usize {
    stats
        .split(" | ")
        .find_map(|part| part.strip_prefix("drafts "))
        .and_then(|d| d.split(['/', ' ']).nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_draft_model_named_on_the_command_line_or_paired_in_the_config_drafts() {
    let home = tempfile::tempdir().expect("temp dir");
    let plain = ask(home.path(), &["--speculative", "off"]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert_eq!(drafted(&text(&plain.stderr)), 0, "{}", text(&plain.stderr));

    // The model drafting for itself: a draft model with the same vocabulary, surely.
    let draft = common::real_model(common::SMOLLM2);
    let flag = format!("draft={}", draft.display());
    let named = ask(home.path(), &["--speculative", &flag]);
    assert!(named.status.success(), "{}", text(&named.stderr));
    assert_eq!(text(&named.stdout), text(&plain.stdout));
    assert!(drafted(&text(&named.stderr)) > 0, "{}", text(&named.stderr));

    let config = format!(
        "speculative = \"draft\"\n[draft_models]\n\"{}\" = \"{}\"\n",
        common::SMOLLM2,
        draft.display()
    );
    let models = draft.parent().expect("the models folder");
    std::fs::write(
        home.path().join("config.toml"),
        format!("models_dir = \"{}\"\n{config}", models.display()),
    )
    .expect("write the config");
    let paired = ask(home.path(), &[]);
    assert!(paired.status.success(), "{}", text(&paired.stderr));
    assert_eq!(text(&paired.stdout), text(&plain.stdout));
    assert!(
        drafted(&text(&paired.stderr)) > 0,
        "{}",
        text(&paired.stderr)
    );
}

#[test]
fn draft_without_a_draft_model_is_refused_with_what_to_do() {
    let home = tempfile::tempdir().expect("temp dir");
    let out = ask(home.path(), &["--speculative", "draft"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("no draft model for"), "{err}");
    assert!(err.contains("[draft_models]"), "{err}");
}

#[test]
fn a_draft_model_of_another_vocabulary_is_refused_with_the_reason() {
    let home = tempfile::tempdir().expect("temp dir");
    let gemma = common::real_model(common::GEMMA3);
    let flag = format!("draft={}", gemma.display());
    let out = ask(home.path(), &["--speculative", &flag]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("share the model's tokenizer"), "{err}");
}
