//! Every input a fuzz target once failed on, replayed on stable Rust without cargo-fuzz:
//! each file under tests/fixtures/fuzz/<target>/ goes to the same `taper::fuzzing` function
//! its target calls. A file that panics (or hangs the test) is a regression.

use std::path::PathBuf;

/// Feeds every saved input of `target` to `entry`, naming the file when one fails.
fn replay(target: &str, entry: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no inputs", dir.display());
    for path in files {
        let data = std::fs::read(&path).expect("readable input");
        let outcome = std::panic::catch_unwind(|| entry(&data));
        assert!(outcome.is_ok(), "{} fails again", path.display());
    }
}

#[test]
fn gguf_header_inputs() {
    replay("gguf_header", taper::fuzzing::gguf_header);
}

#[test]
fn tokenizer_inputs() {
    replay("tokenizer", taper::fuzzing::tokenizer);
}

#[test]
fn constraint_inputs() {
    replay("constraint", taper::fuzzing::constraint);
}

#[test]
fn chat_template_inputs() {
    replay("chat_template", taper::fuzzing::chat_template);
}

#[test]
fn config_inputs() {
    replay("config", taper::fuzzing::config);
}

#[test]
fn session_file_inputs() {
    replay("session_file", taper::fuzzing::session_file);
}
