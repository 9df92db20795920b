//! Broken and hostile files give one clear error, without a panic and without allocating what
//! a lying header claims.

use crate::common;

use candle_core::quantized::GgmlDType;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use taper::engine::gguf::writer::GgufWriter;
use taper::engine::gguf::{GgufHeader, MetaValue};
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

/// A file of `size` bytes that starts with `header` and is sparse after it, so a lying
/// header can sit in front of gigabytes that take no disk space or time to make.
fn sparse_file(dir: &Path, name: &str, header: &[u8], size: u64) -> PathBuf {
    let path = write_file(dir, name, header);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(size)
        .unwrap();
    path
}

fn key(b: &mut Vec<u8>, name: &str) {
    b.extend((name.len() as u64).to_le_bytes());
    b.extend(name.as_bytes());
}

const FOUR_GIB: u64 = 4 << 30;

#[test]
fn millions_of_tensors_in_a_big_file_are_refused_before_allocation() {
    // 100M entries of 24 bytes fit in a 4 GiB file, so only a limit stops the directory.
    let dir = tempfile::tempdir().unwrap();
    let b = header_prefix(100_000_000, 0);
    let msg = load_error(&sparse_file(dir.path(), "tensors.gguf", &b, FOUR_GIB));
    assert!(
        msg.contains("100000000 tensors") && msg.contains("at most"),
        "{msg}"
    );
}

#[test]
fn an_array_of_billions_in_a_big_file_is_refused_before_allocation() {
    // 3G one-byte elements fit in the file but would take 32 bytes each in memory.
    let dir = tempfile::tempdir().unwrap();
    let mut b = header_prefix(0, 1);
    key(&mut b, "tokenizer.ggml.token_type");
    b.extend(9u32.to_le_bytes()); // array
    b.extend(0u32.to_le_bytes()); // of u8
    b.extend((3u64 << 30).to_le_bytes());
    let msg = load_error(&sparse_file(dir.path(), "array.gguf", &b, FOUR_GIB));
    assert!(
        msg.contains("token_type") && msg.contains("MiB of memory"),
        "{msg}"
    );
}

#[test]
fn a_gigabyte_string_in_a_big_file_is_refused_before_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = header_prefix(0, 1);
    key(&mut b, "tokenizer.chat_template");
    b.extend(8u32.to_le_bytes()); // string
    b.extend((3u64 << 30).to_le_bytes());
    let msg = load_error(&sparse_file(dir.path(), "string.gguf", &b, FOUR_GIB));
    assert!(
        msg.contains("chat_template") && msg.contains("MiB of memory"),
        "{msg}"
    );
}

#[test]
fn hundreds_of_millions_of_metadata_entries_are_refused() {
    // Zeros read as entries with an empty key and a u8 value, 13 bytes each.
    let dir = tempfile::tempdir().unwrap();
    let b = header_prefix(0, 300_000_000);
    let msg = load_error(&sparse_file(dir.path(), "entries.gguf", &b, FOUR_GIB));
    assert!(
        msg.contains("metadata entries") && msg.contains("MiB"),
        "{msg}"
    );
}

/// A valid file with one 64-element F32 tensor, written by taper's own writer.
fn one_tensor_file() -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.set("general.architecture", MetaValue::String("llama".into()));
    w.add_tensor("token_embd.weight", GgmlDType::F32, &[64])
        .unwrap();
    let mut bytes = Vec::new();
    w.write(&mut bytes, |t, out| {
        out.write_all(&vec![0u8; t.size_bytes() as usize])
    })
    .unwrap();
    bytes
}

#[test]
fn tensor_data_past_the_end_of_the_file_is_refused() {
    let full = one_tensor_file();
    assert!(GgufHeader::parse_bytes(&full).is_ok());
    let cut = &full[..full.len() - 4];
    let err = GgufHeader::parse_bytes(cut).unwrap_err().to_string();
    assert!(err.contains("past the end of the file"), "{err}");
}

#[test]
fn a_tensor_offset_that_overflows_is_refused() {
    let mut bytes = one_tensor_file();
    // The offset is the last field of the directory entry, right before the padding.
    let name = b"token_embd.weight";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len();
    let offset_at = at + 4 + 8 + 4; // n_dims, one dim, type
    bytes[offset_at..offset_at + 8].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
    let err = GgufHeader::parse_bytes(&bytes).unwrap_err().to_string();
    assert!(err.contains("past the end of the file"), "{err}");
}

#[test]
fn tensor_dimensions_whose_product_overflows_are_refused() {
    let mut bytes = one_tensor_file();
    let name = b"token_embd.weight";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len();
    // Rewrite the entry as four dimensions of 2^20 (2^80 elements): same bytes up to the
    // dims, then the dims, type and offset again.
    let mut patched = bytes[..at].to_vec();
    patched.extend(4u32.to_le_bytes());
    for _ in 0..4 {
        patched.extend((1u64 << 20).to_le_bytes());
    }
    patched.extend(0u32.to_le_bytes());
    patched.extend(0u64.to_le_bytes());
    patched.extend(&bytes[at + 4 + 8 + 4 + 8..]);
    bytes = patched;
    let err = GgufHeader::parse_bytes(&bytes).unwrap_err().to_string();
    assert!(err.contains("impossible size"), "{err}");
}

#[test]
fn a_header_in_memory_names_no_file() {
    let err = GgufHeader::parse_bytes(b"GGUF").unwrap_err().to_string();
    assert!(err.starts_with(taper::engine::gguf::IN_MEMORY), "{err}");
    assert!(GgufHeader::parse_bytes(b"")
        .unwrap_err()
        .to_string()
        .contains("empty"));
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
    millions_of_tensors_in_a_big_file_are_refused_before_allocation();
    an_array_of_billions_in_a_big_file_is_refused_before_allocation();
    a_gigabyte_string_in_a_big_file_is_refused_before_allocation();
    hundreds_of_millions_of_metadata_entries_are_refused();
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
