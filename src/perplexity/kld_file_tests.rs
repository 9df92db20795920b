//! The base-logits file: rows quantize faithfully, files round-trip, and broken or foreign
//! files are refused with a sentence before any row is read.

use super::*;

fn shape(n_vocab: usize) -> BaseShape {
    BaseShape {
        n_ctx: 8,
        n_vocab,
        n_chunk: 2,
    }
}

/// A whole base file in `dir` with rows encoded from simple logits; returns its path.
fn write_base(dir: &Path, shape: &BaseShape) -> PathBuf {
    let path = dir.join("base.kld");
    let tokens: Vec<u32> = (0..shape.n_chunk * shape.n_ctx)
        .map(|i| (i % shape.n_vocab) as u32)
        .collect();
    let mut w = BaseWriter::create(&path, shape, &tokens).expect("create");
    let mut row = vec![0u16; shape.row_len()];
    for k in 0..shape.n_chunk * shape.scored_per_window() {
        let logits: Vec<f32> = (0..shape.n_vocab).map(|i| (i * k % 7) as f32).collect();
        encode_row(&logits, 0, &mut row);
        w.write_rows(&row).expect("write");
    }
    w.finish().expect("finish");
    path
}

#[test]
fn encoded_rows_give_back_the_log_probabilities() {
    let logits: Vec<f32> = (0..33).map(|i| (i as f32 * 0.37).sin() * 6.0).collect();
    let mut row = vec![0u16; shape(33).row_len()];
    assert_eq!(row.len(), 34 + 4, "odd vocabularies get a padding slot");
    let nll = encode_row(&logits, 5, &mut row);
    let (scale, min_log_prob, q) = decode_header(&row);
    let log_z = logits.iter().map(|&x| f64::from(x).exp()).sum::<f64>().ln();
    for (i, &x) in logits.iter().enumerate() {
        let back = f64::from(scale * f32::from(q[i]) + min_log_prob);
        // Half a quantization step, plus f32 rounding.
        assert!((back - (f64::from(x) - log_z)).abs() < 1e-3, "token {i}");
    }
    assert!((nll - (log_z - f64::from(logits[5]))).abs() < 1e-5);
    assert_eq!(q[33], 0, "padding is zero");
}

#[test]
fn log_probabilities_far_below_the_best_are_stored_as_the_floor() {
    let logits = [0.0f32, -40.0, -1.0];
    let mut row = vec![0u16; shape(3).row_len()];
    encode_row(&logits, 0, &mut row);
    let (scale, _, q) = decode_header(&row);
    assert_eq!(q[1], 0);
    assert_eq!(q[0], 65535);
    assert!((scale - 16.0 / 65535.0).abs() < 1e-9);
}

#[test]
fn a_flat_row_stores_zeros() {
    let mut row = vec![7u16; shape(4).row_len()];
    encode_row(&[1.0; 4], 0, &mut row);
    let (scale, min_log_prob, q) = decode_header(&row);
    assert_eq!(scale, 0.0);
    assert!((min_log_prob + 4f32.ln()).abs() < 1e-6);
    assert!(q.iter().all(|&v| v == 0));
}

#[test]
fn a_written_file_reads_back_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = shape(10);
    let path = write_base(dir.path(), &s);
    assert!(!dir.path().join("base.kld.partial").exists());
    assert_eq!(
        std::fs::metadata(&path).expect("meta").len(),
        s.file_bytes()
    );
    let mut r = BaseReader::open(&path, 10).expect("open");
    assert_eq!(r.shape, s);
    assert_eq!(r.tokens[..3], [0, 1, 2]);
    let mut rows = Vec::new();
    r.read_rows(s.n_chunk * s.scored_per_window(), &mut rows)
        .expect("every row");
    assert_eq!(rows.len(), s.n_chunk * s.scored_per_window() * s.row_len());
    assert!(
        r.read_rows(1, &mut rows).is_err(),
        "nothing after the last row"
    );
}

#[test]
fn header_layout_is_llama_cpp_s() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_base(dir.path(), &shape(10));
    let bytes = std::fs::read(path).expect("read");
    assert_eq!(&bytes[..8], b"_logits_");
    assert_eq!(bytes[8..20], [8, 0, 0, 0, 10, 0, 0, 0, 2, 0, 0, 0]);
    assert_eq!(bytes[20..28], [0, 0, 0, 0, 1, 0, 0, 0]);
}

fn open_err(path: &Path, vocab: usize) -> String {
    match BaseReader::open(path, vocab) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn a_truncated_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_base(dir.path(), &shape(10));
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() - 3]).expect("cut");
    assert!(open_err(&path, 10).contains("is truncated"));
    std::fs::write(&path, &bytes[..14]).expect("cut header");
    assert!(open_err(&path, 10).contains("ends inside its header"));
    let mut longer = bytes.clone();
    longer.push(0);
    std::fs::write(&path, longer).expect("extend");
    assert!(open_err(&path, 10).contains("is too long"));
}

#[test]
fn a_file_of_another_vocabulary_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_base(dir.path(), &shape(10));
    let err = open_err(&path, 12);
    assert!(
        err.contains("vocabulary of 10 tokens") && err.contains("has 12"),
        "{err}"
    );
}

#[test]
fn other_files_and_broken_headers_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x");
    std::fs::write(&path, b"GGUF and more bytes here").expect("write");
    assert!(open_err(&path, 10).contains("not a base-logits file"));
    std::fs::write(&path, b"").expect("write");
    assert!(open_err(&path, 10).contains("not a base-logits file"));
    let mut header = b"_logits_".to_vec();
    for v in [8i32, 10, -1] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&path, header).expect("write");
    assert!(open_err(&path, 10).contains("broken header"));
}

#[test]
fn tokens_outside_the_vocabulary_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_base(dir.path(), &shape(10));
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[20..24].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(&path, bytes).expect("write");
    assert!(open_err(&path, 10).contains("token 99"));
}
