//! `taper sessions search TEXT` as the real binary, over the fixtures and sessions saved for
//! the test: blocks newest first with a line of context per message, unreadable files skipped
//! by name, exit 1 when nothing matches.

use super::cli::{home, taper, text, CORRUPT, GOOD};
use super::edit::{write_newer, NEWER};
use std::path::Path;
use taper::sessions::{store, Session};

/// Saves a copy of the good fixture under `id`, updated at `at`, with these user messages
/// added.
fn save(dir: &Path, id: &str, at: u64, title: &str, questions: &[&str]) {
    let good = store::load(&dir.join(format!("{GOOD}.json"))).unwrap();
    let mut s: Session = good.clone();
    s.id = id.to_string();
    s.title = title.to_string();
    s.updated_at = at;
    for q in questions {
        let mut m = good.messages[0].clone();
        m.content = q.to_string();
        s.messages.push(m);
    }
    store::save(dir, &s).unwrap();
}

#[test]
fn matches_are_shown_newest_first_with_context_and_unreadable_files_are_skipped() {
    let (home, dir) = home();
    let long = format!(
        "{} I read that the capital of France is Paris, {}",
        "and then ".repeat(20),
        "which everybody knows ".repeat(10)
    );
    save(&dir, "20261201-090000-0001", 1_796_200_000, "", &[&long]);
    save(
        &dir,
        "20261202-090000-0002",
        1_796_300_000,
        "Trip",
        &["France in May?"],
    );
    write_newer(&dir);
    let out = taper(home.path(), &["sessions", "search", "FRANCE"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let blocks: Vec<&str> = stdout.split("\n\n").collect();
    assert_eq!(blocks.len(), 2, "{stdout}");
    assert!(
        blocks[0].starts_with("20261202-090000-0002  Trip  (updated 2026-12-03 12:13 UTC)"),
        "{stdout}"
    );
    assert!(blocks[0].contains("\n  you: France in May?"), "{stdout}");
    assert!(
        blocks[1].starts_with("20261201-090000-0001  How do I print in Rust?  (updated"),
        "{stdout}"
    );
    let line = blocks[1].lines().nth(1).unwrap();
    assert!(line.starts_with("  you: …"), "{line}");
    assert!(line.contains("the capital of France is Paris"), "{line}");
    assert!(line.ends_with('…') && line.chars().count() < 100, "{line}");
    // Each unreadable file: one line naming it. The matches still count.
    let stderr = text(&out.stderr);
    assert!(
        stderr.lines().all(|l| l.starts_with("taper: skipped ")),
        "{stderr}"
    );
    for (id, why) in [(CORRUPT, "not valid JSON"), (NEWER, "newer taper")] {
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(id)).collect();
        assert!(lines.len() == 1 && lines[0].contains(why), "{stderr}");
    }
}

#[test]
fn every_role_is_searched_and_extra_matches_are_counted() {
    let (home, dir) = home();
    let out = taper(home.path(), &["sessions", "search", "println"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(
            "\n  SmolLM2-135M-Instruct.Q4_1: Use the `println!` macro: ```rust println!(\"hi\"); ```\n"
        ),
        "{}",
        text(&out.stdout)
    );
    let questions = ["rust 1", "rust 2", "rust 3", "rust 4"];
    save(&dir, "20261203-090000-0003", 1_796_400_000, "", &questions);
    let out = taper(home.path(), &["sessions", "search", "rust"]);
    let stdout = text(&out.stdout);
    let first = stdout.split("\n\n").next().unwrap();
    assert_eq!(
        first.lines().skip(1).collect::<Vec<_>>(),
        [
            "  you: How do I print in Rust?",
            "  SmolLM2-135M-Instruct.Q4_1: Use the `println!` macro: ```rust println!(\"hi\"); ```",
            "  you: rust 1",
            "  (3 more)",
        ],
        "{stdout}"
    );
}

#[test]
fn nothing_found_exits_1_with_a_message() {
    let (home, _dir) = home();
    let out = taper(home.path(), &["sessions", "search", "kangaroo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("taper: no saved conversation in") && stderr.contains("\"kangaroo\""),
        "{stderr}"
    );
    let empty = tempfile::tempdir().unwrap();
    let out = taper(empty.path(), &["sessions", "search", "rust"]);
    assert_eq!(out.status.code(), Some(1));
}
