//! `taper sessions rename` and `taper sessions rm` as the real binary: by id, prefix or path;
//! an ambiguous prefix and a newer taper's file change nothing; rm asks, or needs --yes.

use super::cli::{home, snapshot, taper, text, GOOD};
use std::path::Path;

/// A file of format version 99 beside the fixtures (its id: `NEWER`), the good one's bytes
/// otherwise.
pub(crate) const NEWER: &str = "20261201-000000-9999";

pub(crate) fn write_newer(dir: &Path) {
    let good = std::fs::read_to_string(dir.join(format!("{GOOD}.json"))).unwrap();
    let (head, rest) = good.split_once("\"version\": ").unwrap();
    let (_, rest) = rest.split_once(',').unwrap();
    let newer = format!("{head}\"version\": 99,{rest}");
    std::fs::write(dir.join(format!("{NEWER}.json")), newer).unwrap();
}

#[test]
fn rename_by_prefix_then_the_list_shows_the_new_title() {
    let (home, _dir) = home();
    let out = taper(
        home.path(),
        &["sessions", "rename", "20261130-10", "Printing", "in Rust"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("Renamed {GOOD} to “Printing in Rust”\n")
    );
    let list = text(&taper(home.path(), &["sessions"]).stdout);
    let line = list.lines().find(|l| l.starts_with(GOOD)).unwrap();
    assert!(line.ends_with("  Printing in Rust"), "{line}");
    // An empty title goes back to the first question.
    let out = taper(home.path(), &["sessions", "rename", GOOD, ""]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("“How do I print in Rust?”"));
}

#[test]
fn an_ambiguous_prefix_or_a_newer_file_is_refused_and_nothing_changes() {
    let (home, dir) = home();
    write_newer(&dir);
    let before = snapshot(&dir);
    let out = taper(home.path(), &["sessions", "rename", "2026", "X"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("\"2026\" matches 4 sessions") && err.contains("give more of the id"),
        "{err}"
    );
    let out = taper(home.path(), &["sessions", "rename", NEWER, "X"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("taper: not renamed: ") && err.contains("newer taper"),
        "{err}"
    );
    let out = taper(home.path(), &["sessions", "rm", "2026", "--yes"]);
    assert!(text(&out.stderr).contains("matches 4 sessions"));
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn rm_without_a_terminal_needs_yes() {
    let (home, dir) = home();
    let before = snapshot(&dir);
    // `output()` gives the child no stdin: not a terminal.
    let out = taper(home.path(), &["sessions", "rm", GOOD]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("pass --yes"), "{err}");
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn rm_yes_deletes_by_prefix_and_a_newer_tapers_file_too() {
    let (home, dir) = home();
    write_newer(&dir);
    let out = taper(home.path(), &["sessions", "rm", "20261130-10", "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let path = dir.join(format!("{GOOD}.json"));
    assert_eq!(text(&out.stdout), format!("Deleted {}\n", path.display()));
    assert!(!path.exists());
    let out = taper(home.path(), &["sessions", "rm", NEWER, "-y"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!dir.join(format!("{NEWER}.json")).exists());
    assert!(text(&taper(home.path(), &["sessions"]).stdout).contains("2 sessions in"));
}

#[test]
fn rm_never_deletes_a_file_outside_the_sessions_that_is_not_a_session() {
    let (home, _dir) = home();
    let other = home.path().join("notes.json");
    std::fs::write(&other, b"{\"todo\": 1}").unwrap();
    let out = taper(
        home.path(),
        &["sessions", "rm", other.to_str().unwrap(), "--yes"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("not deleting a file outside"), "{err}");
    assert!(other.exists());
}
