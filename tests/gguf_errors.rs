//! Broken and hostile files give one clear error, without a panic and without allocating what
//! a lying header claims.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use taper::engine::gguf::GgufHeader;
use taper::engine::model;

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

/// Reading the header and then the weights fails with a message naming the file.
fn load_error(path: &Path) -> String {
    let result = GgufHeader::read(path)
        .map_err(anyhow::Error::from)
        .and_then(|h| model::load(&h, 128).map(|_| ()));
    let message = format!("{:#}", result.expect_err("a broken file must not load"));
    assert!(message.contains(&path.display().to_string()), "{message}");
    message
}

fn header_prefix(tensors: u64, kvs: u64) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(tensors.to_le_bytes());
    b.extend(kvs.to_le_bytes());
    b
}

#[test]
fn an_empty_file_is_reported_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let msg = load_error(&write_file(dir.path(), "empty.gguf", b""));
    assert!(msg.contains("empty"), "{msg}");
}

#[test]
fn random_bytes_are_not_gguf() {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let msg = load_error(&write_file(dir.path(), "random.gguf", &bytes));
    assert!(msg.contains("not a GGUF file"), "{msg}");
}

#[test]
fn a_missing_file_says_so() {
    let msg = load_error(Path::new("/nonexistent/model.gguf"));
    assert!(msg.contains("cannot open"), "{msg}");
}

#[test]
fn a_string_claiming_a_terabyte_is_rejected_before_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = header_prefix(0, 1);
    b.extend((1u64 << 40).to_le_bytes()); // key length 2^40
    b.extend(b"general.architecture");
    let msg = load_error(&write_file(dir.path(), "huge-string.gguf", &b));
    assert!(msg.contains("more than the"), "{msg}");
}

#[test]
fn a_header_claiming_2_pow_60_tensors_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let msg = load_error(&write_file(
        dir.path(),
        "many.gguf",
        &header_prefix(1 << 60, 0),
    ));
    assert!(msg.contains("claims"), "{msg}");
}

#[test]
fn an_array_claiming_billions_of_elements_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = header_prefix(0, 1);
    let key = b"tokenizer.ggml.tokens";
    b.extend((key.len() as u64).to_le_bytes());
    b.extend(key);
    b.extend(9u32.to_le_bytes()); // array
    b.extend(8u32.to_le_bytes()); // of strings
    b.extend((1u64 << 50).to_le_bytes());
    let msg = load_error(&write_file(dir.path(), "huge-array.gguf", &b));
    assert!(msg.contains("array elements"), "{msg}");
}

#[test]
fn a_gguf_without_architecture_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let msg = load_error(&write_file(dir.path(), "bare.gguf", &header_prefix(0, 0)));
    assert!(msg.contains("general.architecture"), "{msg}");
}

#[test]
fn an_unsupported_architecture_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = header_prefix(0, 1);
    let key = b"general.architecture";
    b.extend((key.len() as u64).to_le_bytes());
    b.extend(key);
    b.extend(8u32.to_le_bytes());
    b.extend(5u64.to_le_bytes());
    b.extend(b"mamba");
    let msg = load_error(&write_file(dir.path(), "mamba.gguf", &b));
    assert!(msg.contains("\"mamba\" is not supported"), "{msg}");
}

#[test]
fn a_real_model_cut_anywhere_gives_a_clear_error() {
    let source = common::reference_dir().join("tiny/llama_q4_k.gguf");
    let full = std::fs::read(&source).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for cut in [3, 8, 23, 100, 1000, 5000, full.len() / 2, full.len() - 1] {
        let path = write_file(dir.path(), &format!("cut-{cut}.gguf"), &full[..cut]);
        let msg = load_error(&path);
        assert!(
            msg.contains("truncated") || msg.contains("too short") || msg.contains("more than the"),
            "cut at {cut}: {msg}"
        );
    }
}

#[test]
fn hostile_headers_never_allocate_gigabytes() {
    // Runs after (or alongside) the tests above in this process; none may have grown it far.
    a_string_claiming_a_terabyte_is_rejected_before_allocation();
    a_header_claiming_2_pow_60_tensors_is_rejected();
    an_array_claiming_billions_of_elements_is_rejected();
    if let Some(peak) = taper::stats::peak_rss_bytes() {
        assert!(peak < 512 << 20, "peak RSS {peak} bytes");
    }
}

#[test]
fn the_binary_prints_one_line_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "junk.gguf", b"definitely not a model");
    let out = Command::new(env!("CARGO_BIN_EXE_taper"))
        .args(["ask", "-m"])
        .arg(&path)
        .arg("hello")
        .env("TAPER_HOME", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("junk.gguf") && stderr.contains("not a GGUF file"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
