//! What happens to each window's logit rows: scored for perplexity, also written to a base
//! file, or compared with a base file's rows. Rows are scored in parallel and summed in
//! position order, so the sums (and the printed numbers) do not depend on the thread count.

use super::kld::{term, KldReport, KldSums};
use super::kld_file::{encode_row, BaseReader, BaseWriter};
use super::stats::{nll, perplexity, Estimate, Moments};
use anyhow::Result;
use rayon::prelude::*;

/// The scoring of one run.
pub enum Scoring {
    Perplexity(Moments),
    WriteBase {
        nll: Moments,
        writer: BaseWriter,
        rows: Vec<u16>,
    },
    Kld {
        sums: KldSums,
        reader: BaseReader,
        rows: Vec<u16>,
    },
}

/// The result of a run.
pub enum Summary {
    Perplexity { ppl: Estimate, positions: usize },
    Kld(Box<KldReport>),
}

impl Scoring {
    pub fn perplexity() -> Self {
        Self::Perplexity(Moments::default())
    }

    pub fn write_base(writer: BaseWriter) -> Self {
        Self::WriteBase {
            nll: Moments::default(),
            writer,
            rows: Vec::new(),
        }
    }

    pub fn kld(reader: BaseReader) -> Self {
        Self::Kld {
            sums: KldSums::default(),
            reader,
            rows: Vec::new(),
        }
    }

    /// Scores `logits` (`targets.len()` rows of `vocab`), row `j` predicting `targets[j]`.
    pub fn rows(&mut self, logits: &[f32], targets: &[u32], vocab: usize) -> Result<()> {
        let pairs = || logits.par_chunks_exact(vocab).zip(targets.par_iter());
        match self {
            Self::Perplexity(moments) => {
                let values: Vec<f64> = pairs().map(|(row, &t)| nll(row, t as usize)).collect();
                values.iter().for_each(|&v| moments.push(v));
            }
            Self::WriteBase { nll, writer, rows } => {
                let row_len = writer_row_len(vocab);
                rows.resize(targets.len() * row_len, 0);
                let values: Vec<f64> = pairs()
                    .zip(rows.par_chunks_exact_mut(row_len))
                    .map(|((row, &t), out)| encode_row(row, t as usize, out))
                    .collect();
                writer.write_rows(rows)?;
                values.iter().for_each(|&v| nll.push(v));
            }
            Self::Kld { sums, reader, rows } => {
                let row_len = reader.shape.row_len();
                reader.read_rows(targets.len(), rows)?;
                let terms: Vec<_> = pairs()
                    .zip(rows.par_chunks_exact(row_len))
                    .map(|((row, &t), base)| term(row, base, t as usize))
                    .collect();
                terms.iter().for_each(|t| sums.push(t));
            }
        }
        Ok(())
    }

    /// The estimate so far, and what it is: for the progress line.
    pub fn running(&self) -> (&'static str, Estimate) {
        match self {
            Self::Perplexity(nll) | Self::WriteBase { nll, .. } => ("PPL", perplexity(nll, 0)),
            Self::Kld { sums, .. } => ("KLD", sums.mean_kld()),
        }
    }

    /// Ends the run: the base file is put in place, the statistics computed.
    pub fn finish(self) -> Result<Summary> {
        Ok(match self {
            Self::Perplexity(nll) => ppl_summary(&nll),
            Self::WriteBase { nll, writer, .. } => {
                writer.finish()?;
                ppl_summary(&nll)
            }
            Self::Kld { sums, .. } => Summary::Kld(Box::new(sums.report())),
        })
    }
}

fn ppl_summary(nll: &Moments) -> Summary {
    Summary::Perplexity {
        ppl: perplexity(nll, 0),
        positions: nll.count,
    }
}

fn writer_row_len(vocab: usize) -> usize {
    2 * vocab.div_ceil(2) + 4
}
