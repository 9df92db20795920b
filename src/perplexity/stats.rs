//! The arithmetic of one scored position, and the sums over many, in llama.cpp's
//! `llama-perplexity` precision: logits are f32, each `exp` is f32, the sum of exponentials
//! and the running sums are f64. Keeping its mix of precisions (not a cleaner one) is what
//! makes taper's numbers comparable with its numbers to the last printed digit.

use serde::Serialize;

/// A logit row's maximum (the first index holding it) and `Σ exp(x - max)` summed in f64.
pub struct RowSoftmax {
    pub max: f32,
    pub argmax: usize,
    pub sum_exp: f64,
}

impl RowSoftmax {
    /// The row must not be empty (a vocabulary has at least one token).
    pub fn of(row: &[f32]) -> Self {
        let mut max = row[0];
        let mut argmax = 0;
        for (i, &x) in row.iter().enumerate().skip(1) {
            if x > max {
                max = x;
                argmax = i;
            }
        }
        let sum_exp = row.iter().map(|&x| f64::from((x - max).exp())).sum();
        Self {
            max,
            argmax,
            sum_exp,
        }
    }

    /// `ln Σ exp`, rounded to f32 as llama.cpp stores it.
    pub fn log_sum_exp_f32(&self) -> f32 {
        self.sum_exp.ln() as f32
    }
}

/// Negative log-likelihood of `target` in `row`, as plain perplexity computes it:
/// `(x_t - max)` in f32, `ln Σ` in f64.
pub fn nll(row: &[f32], target: usize) -> f64 {
    let soft = RowSoftmax::of(row);
    -(f64::from(row[target] - soft.max) - soft.sum_exp.ln())
}

/// Sums of a per-position value and of its square.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Moments {
    pub sum: f64,
    pub sum2: f64,
    pub count: usize,
}

impl Moments {
    pub fn push(&mut self, value: f64) {
        self.push_with_square(value, value * value);
    }

    /// For values whose square llama.cpp takes in f32 before summing it in f64.
    pub fn push_with_square(&mut self, value: f64, square: f64) {
        self.sum += value;
        self.sum2 += square;
        self.count += 1;
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// The standard error of the mean, `sqrt((E[v²] - E[v]²) / (n - 1))`; 0 when the
    /// variance is not positive or fewer than `min_count + 1` values are in (llama.cpp prints
    /// no error for ten values or fewer in its KL-divergence statistics).
    pub fn standard_error(&self, min_count: usize) -> f64 {
        if self.count < 2 || self.count <= min_count {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum / n;
        let variance = self.sum2 / n - mean * mean;
        if variance > 0.0 {
            (variance / (n - 1.0)).sqrt()
        } else {
            0.0
        }
    }
}

/// A value and its standard error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub error: f64,
}

/// Perplexity from the sums of negative log-likelihoods: `exp(mean)`, and its error carried
/// through the exponential (`PPL · se(mean NLL)`), as llama.cpp reports it.
pub fn perplexity(nll: &Moments, min_count: usize) -> Estimate {
    let value = nll.mean().exp();
    Estimate {
        value,
        error: value * nll.standard_error(min_count),
    }
}

/// The value at `fraction` of sorted `values`, interpolated between neighbours in f32 as
/// llama.cpp does; 0 for no values.
pub fn percentile(sorted: &[f32], fraction: f32) -> f32 {
    let (Some(&first), Some(&last)) = (sorted.first(), sorted.last()) else {
        return 0.0;
    };
    if fraction <= 0.0 {
        return first;
    }
    if fraction >= 1.0 {
        return last;
    }
    let p = fraction * (sorted.len() - 1) as f32;
    let ip = p as usize;
    let frac = p - ip as f32;
    (1.0 - frac) * sorted[ip] + frac * sorted[(ip + 1).min(sorted.len() - 1)]
}

/// The middle of sorted `values` (the mean of the two middle ones for an even count).
pub fn median(sorted: &[f32]) -> f32 {
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n.is_multiple_of(2) => 0.5 * (sorted[n / 2] + sorted[n / 2 - 1]),
        _ => sorted[n / 2],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nll_is_the_negative_log_softmax_of_the_target() {
        let row = [1.0f32, 2.0, 3.0, -4.0];
        let log_z = row.iter().map(|&x| f64::from(x).exp()).sum::<f64>().ln();
        for (t, &x) in row.iter().enumerate() {
            let want = log_z - f64::from(x);
            assert!((nll(&row, t) - want).abs() < 1e-6, "token {t}");
        }
        // A uniform row over four tokens: each costs ln 4.
        assert!((nll(&[7.0; 4], 2) - 4f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn softmax_of_huge_logits_does_not_overflow() {
        let row = [1000.0f32, 999.0, -1000.0];
        let soft = RowSoftmax::of(&row);
        assert_eq!((soft.max, soft.argmax), (1000.0, 0));
        assert!(nll(&row, 1).is_finite());
        assert!((nll(&row, 0) - (1.0 + (-1f64).exp()).ln()).abs() < 1e-6);
    }

    #[test]
    fn argmax_is_the_first_of_equal_maxima() {
        assert_eq!(RowSoftmax::of(&[0.0, 5.0, 5.0]).argmax, 1);
    }

    #[test]
    fn standard_error_follows_llama_cpp_formula() {
        let values = [1.0, 2.0, 3.0, 4.0, 10.0];
        let mut m = Moments::default();
        values.iter().for_each(|&v| m.push(v));
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| v * v).sum::<f64>() / n - mean * mean;
        let want = (var / (n - 1.0)).sqrt();
        assert!((m.standard_error(0) - want).abs() < 1e-12);
        // Equivalently the sample standard deviation over sqrt(n).
        let sample_var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert!((m.standard_error(0) - (sample_var / n).sqrt()).abs() < 1e-12);
        assert_eq!(m.standard_error(10), 0.0, "too few values for the KLD rule");
        let ppl = perplexity(&m, 0);
        assert!((ppl.value - mean.exp()).abs() < 1e-9);
        assert!((ppl.error - mean.exp() * want).abs() < 1e-9);
    }

    #[test]
    fn constant_values_have_no_error() {
        let mut m = Moments::default();
        (0..20).for_each(|_| m.push(0.5));
        assert_eq!(m.standard_error(0), 0.0);
        assert_eq!(Moments::default().standard_error(0), 0.0);
    }

    #[test]
    fn percentiles_interpolate_between_neighbours() {
        let v = [0.0f32, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.0), 0.0);
        assert_eq!(percentile(&v, 1.0), 4.0);
        assert_eq!(percentile(&v, 0.5), 2.0);
        assert!((percentile(&v, 0.9) - 3.6).abs() < 1e-6);
        assert_eq!(median(&v), 2.0);
        assert_eq!(median(&[1.0, 2.0]), 1.5);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
