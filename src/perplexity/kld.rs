//! KL divergence of the model's next-token distributions from a base file's, position by
//! position, and the statistics `llama-perplexity --kl-divergence` prints: both perplexities,
//! their ratio, mean KLD with its percentiles, the change Δp of the correct token's
//! probability, and how often the most likely token is the same.

use super::kld_file::decode_header;
use super::stats::{median, percentile, perplexity, Estimate, Moments, RowSoftmax};
use serde::Serialize;

/// llama.cpp leaves out the error of a mean over ten values or fewer.
const MIN_COUNT: usize = 10;

/// What one position contributes.
#[derive(Debug, Clone, Copy)]
pub struct Term {
    pub nll: f32,
    pub nll_base: f32,
    pub kld: f64,
    pub p_diff: f32,
    pub same_top: bool,
}

/// Compares one logit row with its stored base row (as [`super::kld_file`] lays it out).
pub fn term(logits: &[f32], base_row: &[u16], target: usize) -> Term {
    let soft = RowSoftmax::of(logits);
    let log_sum_exp = soft.log_sum_exp_f32();
    let (scale, min_log_prob, base) = decode_header(base_row);
    let nll = soft.max + log_sum_exp - logits[target];
    let nll_base = -(scale * f32::from(base[target]) + min_log_prob);
    let log_z = soft.max + log_sum_exp;
    let mut kld = 0.0f64;
    let mut top_base = 0;
    let mut top_base_log_p = 0.0f32;
    for (i, (&q, &x)) in base.iter().zip(logits).enumerate() {
        let log_p_base = scale * f32::from(q) + min_log_prob;
        if i == 0 || log_p_base > top_base_log_p {
            top_base_log_p = log_p_base;
            top_base = i;
        }
        // Base probabilities under e^-16 were stored as the floor: left out, as llama.cpp does.
        if log_p_base > -16.0 {
            kld += f64::from(log_p_base.exp() * (log_p_base - x + log_z));
        }
    }
    Term {
        nll,
        nll_base,
        kld,
        p_diff: (-nll).exp() - (-nll_base).exp(),
        same_top: soft.argmax == top_base,
    }
}

/// The running sums over positions, and every position's KLD and Δp for the percentiles.
#[derive(Debug, Default, Clone)]
pub struct KldSums {
    nll: Moments,
    nll_base: Moments,
    nll_nll_base: f64,
    kld: Moments,
    p_diff: Moments,
    p_diff4: f64,
    same_top: usize,
    kld_values: Vec<f32>,
    p_diff_values: Vec<f32>,
}

impl KldSums {
    pub fn push(&mut self, t: &Term) {
        // Products in f32 first, as llama.cpp forms them.
        self.nll
            .push_with_square(f64::from(t.nll), f64::from(t.nll * t.nll));
        self.nll_base
            .push_with_square(f64::from(t.nll_base), f64::from(t.nll_base * t.nll_base));
        self.nll_nll_base += f64::from(t.nll * t.nll_base);
        self.kld.push(t.kld);
        let p_diff2 = f64::from(t.p_diff * t.p_diff);
        self.p_diff.push_with_square(f64::from(t.p_diff), p_diff2);
        self.p_diff4 += p_diff2 * p_diff2;
        self.same_top += usize::from(t.same_top);
        self.kld_values.push(t.kld as f32);
        self.p_diff_values.push(t.p_diff);
    }

    pub fn count(&self) -> usize {
        self.kld.count
    }

    /// The mean KLD so far and its error (the progress line's running estimate).
    pub fn mean_kld(&self) -> Estimate {
        Estimate {
            value: self.kld.mean(),
            error: self.kld.standard_error(MIN_COUNT),
        }
    }

    /// The final statistics.
    pub fn report(&self) -> KldReport {
        let n = self.count();
        let ppl = perplexity(&self.nll, MIN_COUNT);
        let ppl_base = perplexity(&self.nll_base, MIN_COUNT);
        let se = self.nll.standard_error(MIN_COUNT);
        let se_base = self.nll_base.standard_error(MIN_COUNT);
        let cov = if n < MIN_COUNT {
            0.0
        } else {
            let nf = n as f64;
            (self.nll_nll_base / nf - self.nll.mean() * self.nll_base.mean()) / (nf - 1.0)
        };
        let ratio_log = self.nll.mean() - self.nll_base.mean();
        let ratio_log_error = (se * se + se_base * se_base - 2.0 * cov).sqrt();
        let ratio = ratio_log.exp();
        let ppl_cov = ppl.value * ppl_base.value * cov;
        let diff_error =
            (ppl.error * ppl.error + ppl_base.error * ppl_base.error - 2.0 * ppl_cov).sqrt();
        let mse = Moments {
            sum: self.p_diff.sum2,
            sum2: self.p_diff4,
            count: n,
        };
        let rms = mse.mean().sqrt();
        let same = if n == 0 {
            0.0
        } else {
            self.same_top as f64 / n as f64
        };
        let same_error = if n < 2 {
            0.0
        } else {
            (same * (1.0 - same) / (n as f64 - 1.0)).sqrt()
        };
        KldReport {
            positions: n,
            ppl,
            ppl_base,
            correlation: cov / (se * se_base),
            ln_ppl_ratio: Estimate {
                value: ratio_log,
                error: ratio_log_error,
            },
            ppl_ratio: Estimate {
                value: ratio,
                error: ratio * ratio_log_error,
            },
            ppl_diff: Estimate {
                value: ppl.value - ppl_base.value,
                error: diff_error,
            },
            kld: self.mean_kld(),
            kld_spread: Spread::of(&self.kld_values),
            p_diff: Estimate {
                value: self.p_diff.mean(),
                error: self.p_diff.standard_error(MIN_COUNT),
            },
            p_diff_spread: Spread::of(&self.p_diff_values),
            p_diff_rms: Estimate {
                value: rms,
                error: 0.5 / rms * mse.standard_error(MIN_COUNT),
            },
            same_top: Estimate {
                value: same,
                error: same_error,
            },
        }
    }
}

/// Everything `--kl-divergence` reports (Δp and same-top as fractions, not percent).
#[derive(Debug, Clone, Serialize)]
pub struct KldReport {
    pub positions: usize,
    pub ppl: Estimate,
    pub ppl_base: Estimate,
    pub correlation: f64,
    pub ln_ppl_ratio: Estimate,
    pub ppl_ratio: Estimate,
    pub ppl_diff: Estimate,
    pub kld: Estimate,
    pub kld_spread: Spread,
    pub p_diff: Estimate,
    pub p_diff_spread: Spread,
    pub p_diff_rms: Estimate,
    pub same_top: Estimate,
}

/// The distribution of a per-position value: the percentiles llama.cpp prints.
#[derive(Debug, Clone, Serialize)]
pub struct Spread {
    pub max: f32,
    pub p99_9: f32,
    pub p99: f32,
    pub p95: f32,
    pub p90: f32,
    pub p75: f32,
    pub median: f32,
    pub p25: f32,
    pub p10: f32,
    pub p5: f32,
    pub p1: f32,
    pub p0_1: f32,
    pub min: f32,
}

impl Spread {
    fn of(values: &[f32]) -> Self {
        let mut v = values.to_vec();
        v.sort_by(f32::total_cmp);
        let at = |f: f32| percentile(&v, f);
        Self {
            max: at(1.0),
            p99_9: at(0.999),
            p99: at(0.99),
            p95: at(0.95),
            p90: at(0.90),
            p75: at(0.75),
            median: median(&v),
            p25: at(0.25),
            p10: at(0.10),
            p5: at(0.05),
            p1: at(0.01),
            p0_1: at(0.001),
            min: at(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::kld_file::encode_row;
    use super::*;

    fn stored(logits: &[f32]) -> Vec<u16> {
        let mut row = vec![0u16; 2 * logits.len().div_ceil(2) + 4];
        encode_row(logits, 0, &mut row);
        row
    }

    #[test]
    fn a_row_against_its_own_base_has_no_divergence() {
        let logits: Vec<f32> = (0..101)
            .map(|i| ((i * 37) % 23) as f32 * 0.7 - 5.0)
            .collect();
        let t = term(&logits, &stored(&logits), 3);
        assert!(t.kld.abs() < 1e-4, "{}", t.kld);
        assert!(t.p_diff.abs() < 1e-3 && t.same_top);
        assert!((t.nll - t.nll_base).abs() < 1e-3);
    }

    #[test]
    fn divergence_matches_the_definition_and_top_tokens_are_compared() {
        let base = [2.0f32, 1.0, 0.0, -1.0];
        let other = [0.0f32, 2.5, 0.0, -1.0];
        let t = term(&other, &stored(&base), 1);
        let softmax = |r: &[f32]| {
            let z: f64 = r.iter().map(|&x| f64::from(x).exp()).sum();
            r.iter()
                .map(|&x| f64::from(x).exp() / z)
                .collect::<Vec<_>>()
        };
        let (p, q) = (softmax(&base), softmax(&other));
        let want: f64 = p.iter().zip(&q).map(|(p, q)| p * (p / q).ln()).sum();
        assert!((t.kld - want).abs() < 1e-3, "{} vs {want}", t.kld);
        assert!(!t.same_top);
        assert!((f64::from(t.p_diff) - (q[1] - p[1])).abs() < 1e-3);
    }

    #[test]
    fn report_of_identical_distributions() {
        let mut sums = KldSums::default();
        for k in 0..50 {
            let logits: Vec<f32> = (0..64).map(|i| ((i * k + 7) % 13) as f32 * 0.5).collect();
            sums.push(&term(&logits, &stored(&logits), k % 64));
        }
        let r = sums.report();
        assert_eq!(r.positions, 50);
        assert_eq!(r.same_top.value, 1.0);
        assert!(r.kld.value.abs() < 1e-4);
        assert!((r.ppl.value / r.ppl_base.value - 1.0).abs() < 1e-3);
        assert!(r.kld_spread.min <= r.kld_spread.median && r.kld_spread.median <= r.kld_spread.max);
    }
}
