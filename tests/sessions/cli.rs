//! `taper sessions` and `taper export` on fixture files: a good session, one written by a
//! newer taper (version 9) and a truncated one. The unreadable ones are reported by name and
//! never changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) const GOOD: &str = "20261130-101500-c0de";
pub(crate) const FUTURE: &str = "20261130-090000-f00d";
pub(crate) const CORRUPT: &str = "20261129-080000-dead";

/// A data directory whose `sessions/` holds copies of the fixtures.
pub(crate) fn home() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions");
    for id in [GOOD, FUTURE, CORRUPT] {
        let name = format!("{id}.json");
        std::fs::copy(fixtures.join(&name), dir.join(&name)).unwrap();
    }
    (home, dir)
}

pub(crate) fn taper(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_taper"))
        .args(args)
        .env("TAPER_HOME", home)
        .output()
        .unwrap()
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every file's bytes, to compare before and after.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

#[test]
fn sessions_lists_readable_ones_and_reports_the_others_by_file() {
    let (home, dir) = home();
    let before = snapshot(&dir);
    for args in [&["sessions"][..], &["sessions", "list"][..]] {
        let out = taper(home.path(), args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let good = stdout
            .lines()
            .find(|l| l.starts_with(GOOD))
            .unwrap_or_else(|| panic!("{stdout}"));
        assert!(good.contains("How do I print in Rust?"), "{good}");
        assert!(good.contains("2026-11-30 10:16 UTC"), "{good}");
        assert!(
            good.contains("SmolLM2-135M-Instruct.Q4_1, gemma-3-270m-q4_k_m   How"),
            "{good}"
        );
        let future = stdout.lines().find(|l| l.starts_with(FUTURE)).unwrap();
        assert!(
            future.contains("unreadable: written by a newer taper (format version 9"),
            "{future}"
        );
        assert!(future.contains(&format!("{FUTURE}.json")), "{future}");
        let corrupt = stdout.lines().find(|l| l.starts_with(CORRUPT)).unwrap();
        assert!(corrupt.contains("unreadable: not valid JSON"), "{corrupt}");
        assert!(stdout.contains("3 sessions in"), "{stdout}");
    }
    assert_eq!(snapshot(&dir), before, "listing changed a file");
}

#[test]
fn no_sessions_says_where_they_would_be() {
    let home = tempfile::tempdir().unwrap();
    let out = taper(home.path(), &["sessions"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("No saved sessions in"));
}

#[test]
fn export_writes_markdown_by_prefix_and_json_as_saved() {
    let (home, dir) = home();
    let out = taper(home.path(), &["export", "20261130-10", "--markdown"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let md = text(&out.stdout);
    assert!(md.starts_with("# How do I print in Rust?\n"), "{md}");
    assert!(md.contains("> Answer in one sentence."), "{md}");
    assert!(
        md.contains("## SmolLM2-135M-Instruct.Q4_1 · 2026-11-30 10:15 UTC · 31 prompt + 18"),
        "{md}"
    );
    assert!(md.contains("```rust\nprintln!(\"hi\");\n```"), "{md}");
    assert!(md.contains("Use print(\n\n*(stopped)*"), "{md}");

    let out = taper(home.path(), &["export", GOOD, "--json"]);
    assert!(out.status.success());
    let saved = std::fs::read(dir.join(format!("{GOOD}.json"))).unwrap();
    assert_eq!(out.stdout, saved);

    let file = home.path().join("out.md");
    let out = taper(home.path(), &["export", GOOD, "-o", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), md);
}

#[test]
fn exporting_an_unreadable_session_fails_naming_the_file_and_changes_nothing() {
    let (home, dir) = home();
    let before = snapshot(&dir);
    for (id, why) in [
        (
            FUTURE,
            "written by a newer taper (format version 9; this one reads up to",
        ),
        (CORRUPT, "not valid JSON"),
    ] {
        for format in ["--markdown", "--json"] {
            let out = taper(home.path(), &["export", id, format]);
            assert!(!out.status.success());
            assert!(out.stdout.is_empty());
            let err = text(&out.stderr);
            assert!(
                err.contains(&format!("{id}.json")) && err.contains(why),
                "{err}"
            );
        }
    }
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn resuming_an_unreadable_or_unknown_session_is_reported_before_the_screen_opens() {
    let (home, dir) = home();
    let before = snapshot(&dir);
    let out = taper(home.path(), &["--resume", FUTURE]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{FUTURE}.json")) && err.contains("newer taper"),
        "{err}"
    );
    let out = taper(home.path(), &["chat", "--resume", "nothing-like-it"]);
    let err = text(&out.stderr);
    assert!(err.contains("no session \"nothing-like-it\""), "{err}");
    let out = taper(home.path(), &["export", "2026"]);
    let err = text(&out.stderr);
    assert!(err.contains("matches 3 sessions"), "{err}");
    assert_eq!(snapshot(&dir), before);
}
