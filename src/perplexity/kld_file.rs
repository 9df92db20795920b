//! llama.cpp's base-logits file (`llama-perplexity --kl-divergence-base`), so a base written
//! by either program can be read by the other. Little-endian throughout:
//!
//! ```text
//! "_logits_"  n_ctx: u32  n_vocab: i32  n_chunk: i32  tokens: i32 × n_chunk·n_ctx
//! then for every window, for each of its n_ctx - 1 - n_ctx/2 scored positions, one row of
//! nv = 2·⌈n_vocab/2⌉ + 4 u16: scale: f32, min_log_prob: f32, n_vocab quantized log-probs
//! (log p = scale·q + min_log_prob), a u16 of padding when n_vocab is odd.
//! ```
//!
//! Log-probabilities below the best one minus 16 are stored as the floor (q = 0).

use super::stats::RowSoftmax;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"_logits_";
const HEADER_BYTES: u64 = 8 + 4 + 4 + 4;

/// The shape of a base file: what its header says.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseShape {
    pub n_ctx: usize,
    pub n_vocab: usize,
    pub n_chunk: usize,
}

impl BaseShape {
    /// u16 slots per stored row.
    pub fn row_len(&self) -> usize {
        2 * self.n_vocab.div_ceil(2) + 4
    }

    pub fn scored_per_window(&self) -> usize {
        super::scored_per_window(self.n_ctx)
    }

    /// The size of a whole file of this shape.
    pub fn file_bytes(&self) -> u64 {
        let tokens = (self.n_chunk * self.n_ctx) as u64 * 4;
        let rows = (self.n_chunk * self.scored_per_window()) as u64;
        HEADER_BYTES + tokens + rows * self.row_len() as u64 * 2
    }
}

/// Quantizes one logit row's log-probabilities into `out` (`row_len` slots) and returns the
/// negative log-likelihood of `target`, both as llama.cpp computes them.
pub fn encode_row(logits: &[f32], target: usize, out: &mut [u16]) -> f64 {
    let soft = RowSoftmax::of(logits);
    let lowest = logits.iter().copied().fold(logits[0], f32::min);
    let min_logit = lowest.max(soft.max - 16.0);
    let log_sum_exp = soft.log_sum_exp_f32();
    let min_log_prob = min_logit - soft.max - log_sum_exp;
    let scale = (soft.max - min_logit) / 65535.0;
    let (head, body) = out.split_at_mut(4);
    head[..2].copy_from_slice(&f32_halves(scale));
    head[2..].copy_from_slice(&f32_halves(min_log_prob));
    body.fill(0);
    if scale != 0.0 {
        let inv_scale = 1.0 / scale;
        for (q, &x) in body.iter_mut().zip(logits) {
            if x > min_logit {
                // Ties to even, as llama.cpp's float trick rounds; at most 65535 by construction.
                *q = (inv_scale * (x - min_logit)).round_ties_even().min(65535.0) as u16;
            }
        }
    }
    f64::from(soft.max + log_sum_exp - logits[target])
}

/// The scale and offset of a stored row, and its quantized values.
pub fn decode_header(row: &[u16]) -> (f32, f32, &[u16]) {
    let scale = f32::from_bits(u32::from(row[0]) | u32::from(row[1]) << 16);
    let min_log_prob = f32::from_bits(u32::from(row[2]) | u32::from(row[3]) << 16);
    (scale, min_log_prob, &row[4..])
}

fn f32_halves(v: f32) -> [u16; 2] {
    let bits = v.to_bits();
    [bits as u16, (bits >> 16) as u16]
}

/// Writes a base file; it appears under its name only when [`BaseWriter::finish`] succeeds,
/// so a run that fails half-way never leaves a short file that looks whole.
pub struct BaseWriter {
    out: BufWriter<File>,
    partial: PathBuf,
    path: PathBuf,
    bytes: Vec<u8>,
}

impl BaseWriter {
    pub fn create(path: &Path, shape: &BaseShape, tokens: &[u32]) -> Result<Self> {
        let mut name = path.as_os_str().to_owned();
        name.push(".partial");
        let partial = PathBuf::from(name);
        let file = File::create(&partial)
            .with_context(|| format!("cannot create {}", partial.display()))?;
        let mut writer = Self {
            out: BufWriter::new(file),
            partial,
            path: path.to_path_buf(),
            bytes: Vec::new(),
        };
        let mut header = MAGIC.to_vec();
        for n in [shape.n_ctx, shape.n_vocab, shape.n_chunk] {
            header.extend_from_slice(&as_i32(n)?.to_le_bytes());
        }
        for &t in &tokens[..shape.n_chunk * shape.n_ctx] {
            header.extend_from_slice(&t.to_le_bytes());
        }
        writer.write_bytes(&header)?;
        Ok(writer)
    }

    pub fn write_rows(&mut self, rows: &[u16]) -> Result<()> {
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes.clear();
        bytes.extend(rows.iter().flat_map(|v| v.to_le_bytes()));
        let written = self.write_bytes(&bytes);
        self.bytes = bytes;
        written
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .with_context(|| format!("cannot write {}", self.partial.display()))
    }

    pub fn finish(self) -> Result<()> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("cannot write {}", self.partial.display()))?;
        file.sync_all()?;
        std::fs::rename(&self.partial, &self.path)
            .with_context(|| format!("cannot rename to {}", self.path.display()))
    }
}

fn as_i32(n: usize) -> Result<i32> {
    i32::try_from(n).context("the base file's sizes must fit in 32 bits")
}

/// Reads a base file: its header and tokens checked whole before any row is read.
pub struct BaseReader {
    input: BufReader<File>,
    pub shape: BaseShape,
    pub tokens: Vec<u32>,
    bytes: Vec<u8>,
}

impl BaseReader {
    /// Opens `path` and checks it against the model's `vocab` (the logit row width).
    pub fn open(path: &Path, vocab: usize) -> Result<Self> {
        let shown = path.display();
        let file = File::open(path).with_context(|| format!("cannot open {shown}"))?;
        let len = file.metadata()?.len();
        let mut input = BufReader::new(file);
        let mut head = Vec::new();
        (&mut input).take(HEADER_BYTES).read_to_end(&mut head)?;
        if !head.starts_with(MAGIC) {
            bail!("{shown} is not a base-logits file (written by --kl-divergence-base)");
        }
        if head.len() < HEADER_BYTES as usize {
            bail!("{shown} is truncated: it ends inside its header");
        }
        let field = |i: usize| i32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let (n_ctx, n_vocab, n_chunk) = (field(8), field(12), field(16));
        if n_ctx < 4 || n_vocab < 1 || n_chunk < 1 {
            bail!(
                "{shown} has a broken header (n_ctx {n_ctx}, n_vocab {n_vocab}, {n_chunk} windows)"
            );
        }
        let shape = BaseShape {
            n_ctx: n_ctx as usize,
            n_vocab: n_vocab as usize,
            n_chunk: n_chunk as usize,
        };
        if shape.n_vocab != vocab {
            bail!(
                "{shown} was written for a vocabulary of {} tokens, but this model has {vocab}: \
                 it belongs to another model family",
                shape.n_vocab
            );
        }
        let want = shape.file_bytes();
        if len != want {
            let how = if len < want {
                "is truncated"
            } else {
                "is too long"
            };
            bail!(
                "{shown} {how}: {} windows of {} tokens take {want} bytes, the file has {len}",
                shape.n_chunk,
                shape.n_ctx
            );
        }
        let mut raw = vec![0u8; shape.n_chunk * shape.n_ctx * 4];
        input.read_exact(&mut raw)?;
        let tokens: Vec<u32> = raw
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if let Some(bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
            bail!("{shown} holds token {bad}, outside this model's vocabulary of {vocab}");
        }
        Ok(Self {
            input,
            shape,
            tokens,
            bytes: Vec::new(),
        })
    }

    /// The next `rows` stored rows into `out` (`rows × row_len` slots).
    pub fn read_rows(&mut self, rows: usize, out: &mut Vec<u16>) -> Result<()> {
        let n = rows * self.shape.row_len();
        self.bytes.resize(n * 2, 0);
        self.input
            .read_exact(&mut self.bytes)
            .context("the base file ended early")?;
        out.clear();
        out.extend(
            self.bytes
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]])),
        );
        Ok(())
    }
}

#[cfg(test)]
#[path = "kld_file_tests.rs"]
mod tests;
