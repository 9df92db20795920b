//! The bench's figures: what one run measures, what a measuring process reports, and the
//! record (medians, min–max and every run) that the outputs show.

use crate::protocol::CacheType;
use serde::{Deserialize, Serialize};

/// Prefill speed at one prompt length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillFigure {
    pub prompt_tokens: usize,
    pub tok_s: f64,
}

/// Prefill of `depth` tokens from an empty cache, and the decode speed right after it (so
/// `depth` tokens into the context): llama-bench's `-p depth` and `-gp depth,gen`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepthFigure {
    pub depth: usize,
    pub prefill_tok_s: f64,
    pub decode_tok_s: f64,
}

/// Everything one run measures (rates from `crate::stats`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFigures {
    /// Header, tokenizer, chat template and weights: nothing to ready to generate.
    pub load_s: f64,
    pub ttft_ms: f64,
    pub prefill: Vec<PrefillFigure>,
    pub decode_tok_s: f64,
    pub decode_tok_s_first_quarter: f64,
    pub decode_tok_s_last_quarter: f64,
    /// Greedy tokens generated in the decode run (the first one included).
    pub generated_tokens: usize,
    /// With `--json-schema`: the grammar's time per generated token, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grammar_ms_per_token: Option<f64>,
    /// With `--speculative ngram`: decode with drafts beside plain, and verify passes' cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculation: Option<super::speculation::SpeculationFigures>,
    /// Figures far into a context, one per `--depth` (reports before --depth have none).
    #[serde(default)]
    pub depths: Vec<DepthFigure>,
    /// The process's peak resident memory during this run (since the previous run's model
    /// was released, where the OS lets the peak be reset).
    pub peak_rss_bytes: u64,
}

/// What a measuring process prints: one model at one thread count, every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReport {
    pub path: String,
    /// `general.name`, when the file has one.
    pub name: Option<String>,
    /// No vocabulary (`tokenizer.ggml.model = "no_vocab"`): random weights, speed only.
    pub shape_only: bool,
    pub architecture: String,
    pub quantization: String,
    pub parameters: u64,
    pub file_size_bytes: u64,
    pub threads: usize,
    /// The kernel path that computed it (`avx512-vnni`, `avx2`, `scalar`, ...).
    pub kernels: String,
    pub context_size: usize,
    pub cache_type: CacheType,
    pub ttft_prompt_tokens: usize,
    pub warmup_runs: usize,
    pub runs: Vec<RunFigures>,
}

/// Median and min–max of one figure over the runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Self {
        let (min, max) = min_max(values);
        Self {
            median: median(values),
            min,
            max,
        }
    }

    fn range(&self) -> [f64; 2] {
        [self.min, self.max]
    }
}

/// The median; the mean of the two middle values for an even count; 0 for none.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The smallest and largest value; (0, 0) for none.
pub fn min_max(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// Quarter rates of a decode run timed step by step: (first quarter, last quarter) in tok/s.
/// A quarter is at least one step.
pub fn quarter_rates(step_s: &[f64]) -> (f64, f64) {
    if step_s.is_empty() {
        return (0.0, 0.0);
    }
    let q = (step_s.len() / 4).max(1);
    (
        crate::stats::steps_tok_s(&step_s[..q]),
        crate::stats::steps_tok_s(&step_s[step_s.len() - q..]),
    )
}

/// The median figures at each depth the runs measured.
fn depth_medians(runs: &[RunFigures]) -> Vec<DepthFigure> {
    let depths: Vec<usize> = runs
        .first()
        .map(|r| r.depths.iter().map(|d| d.depth).collect())
        .unwrap_or_default();
    depths
        .into_iter()
        .map(|depth| {
            let of = |f: &dyn Fn(&DepthFigure) -> f64| {
                let values: Vec<f64> = runs
                    .iter()
                    .map(|r| r.depths.iter().find(|d| d.depth == depth).map_or(0.0, f))
                    .collect();
                median(&values)
            };
            DepthFigure {
                depth,
                prefill_tok_s: of(&|d| d.prefill_tok_s),
                decode_tok_s: of(&|d| d.decode_tok_s),
            }
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillRange {
    pub prompt_tokens: usize,
    pub tok_s: [f64; 2],
}

/// The min–max of every figure a record gives the median of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranges {
    pub load_s: [f64; 2],
    pub ttft_ms: [f64; 2],
    pub prefill: Vec<PrefillRange>,
    pub decode_tok_s: [f64; 2],
    pub decode_tok_s_first_quarter: [f64; 2],
    pub decode_tok_s_last_quarter: [f64; 2],
    pub peak_rss_bytes: [u64; 2],
}

/// One model at one thread count: medians over the runs, their min–max, and every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRecord {
    /// The name shown everywhere; shape-only models carry "(shape-only)".
    pub model: String,
    pub shape_only: bool,
    pub path: String,
    pub architecture: String,
    pub quantization: String,
    pub parameters: u64,
    pub file_size_bytes: u64,
    pub threads: usize,
    /// The kernel path that computed it.
    pub kernels: String,
    pub context_size: usize,
    /// The KV cache's number format.
    pub cache_type: CacheType,
    pub load_s: f64,
    pub ttft_ms: f64,
    pub ttft_prompt_tokens: usize,
    pub prefill: Vec<PrefillFigure>,
    pub decode_tok_s: f64,
    pub decode_tok_s_first_quarter: f64,
    pub decode_tok_s_last_quarter: f64,
    pub gen_tokens: usize,
    pub peak_rss_bytes: u64,
    /// Medians at each `--depth`.
    pub depths: Vec<DepthFigure>,
    pub warmup_runs: usize,
    pub min_max: Ranges,
    pub runs: Vec<RunFigures>,
}

/// The marker shape-only results carry wherever they are shown.
pub const SHAPE_ONLY: &str = "shape-only";

/// How a model is called in the outputs.
pub fn label(name: &str, shape_only: bool) -> String {
    if shape_only {
        format!("{name} ({SHAPE_ONLY})")
    } else {
        name.to_string()
    }
}

impl BenchRecord {
    /// Medians and ranges over the report's runs; `name` is what the user called the model.
    pub fn from_report(name: &str, report: ModelReport) -> Self {
        let runs = &report.runs;
        let spread =
            |f: &dyn Fn(&RunFigures) -> f64| Spread::of(&runs.iter().map(f).collect::<Vec<_>>());
        let load = spread(&|r| r.load_s);
        let ttft = spread(&|r| r.ttft_ms);
        let decode = spread(&|r| r.decode_tok_s);
        let first = spread(&|r| r.decode_tok_s_first_quarter);
        let last = spread(&|r| r.decode_tok_s_last_quarter);
        let rss = spread(&|r| r.peak_rss_bytes as f64);
        let lengths: Vec<usize> = runs
            .first()
            .map(|r| r.prefill.iter().map(|p| p.prompt_tokens).collect())
            .unwrap_or_default();
        let prefill_spreads: Vec<(usize, Spread)> = lengths
            .iter()
            .map(|&n| {
                let of_n = |r: &RunFigures| {
                    r.prefill
                        .iter()
                        .find(|p| p.prompt_tokens == n)
                        .map_or(0.0, |p| p.tok_s)
                };
                (n, spread(&of_n))
            })
            .collect();
        BenchRecord {
            model: label(name, report.shape_only),
            shape_only: report.shape_only,
            path: report.path,
            architecture: report.architecture,
            quantization: report.quantization,
            parameters: report.parameters,
            file_size_bytes: report.file_size_bytes,
            threads: report.threads,
            kernels: report.kernels,
            context_size: report.context_size,
            cache_type: report.cache_type,
            load_s: load.median,
            ttft_ms: ttft.median,
            ttft_prompt_tokens: report.ttft_prompt_tokens,
            prefill: prefill_spreads
                .iter()
                .map(|(n, s)| PrefillFigure {
                    prompt_tokens: *n,
                    tok_s: s.median,
                })
                .collect(),
            decode_tok_s: decode.median,
            decode_tok_s_first_quarter: first.median,
            decode_tok_s_last_quarter: last.median,
            gen_tokens: runs.first().map_or(0, |r| r.generated_tokens),
            peak_rss_bytes: rss.median.round() as u64,
            depths: depth_medians(runs),
            warmup_runs: report.warmup_runs,
            min_max: Ranges {
                load_s: load.range(),
                ttft_ms: ttft.range(),
                prefill: prefill_spreads
                    .iter()
                    .map(|(n, s)| PrefillRange {
                        prompt_tokens: *n,
                        tok_s: s.range(),
                    })
                    .collect(),
                decode_tok_s: decode.range(),
                decode_tok_s_first_quarter: first.range(),
                decode_tok_s_last_quarter: last.range(),
                peak_rss_bytes: [rss.min as u64, rss.max as u64],
            },
            runs: report.runs,
        }
    }

    /// The spread of a figure over the runs, for the outputs.
    pub fn spread_of(&self, f: impl Fn(&RunFigures) -> f64) -> Spread {
        Spread::of(&self.runs.iter().map(f).collect::<Vec<_>>())
    }

    /// The spread of a figure at `depth`.
    pub fn depth_spread(&self, depth: usize, f: impl Fn(&DepthFigure) -> f64) -> Spread {
        self.spread_of(|r| r.depths.iter().find(|d| d.depth == depth).map_or(0.0, &f))
    }

    /// The spread of prefill speed at `prompt_tokens`.
    pub fn prefill_spread(&self, prompt_tokens: usize) -> Spread {
        self.spread_of(|r| {
            r.prefill
                .iter()
                .find(|p| p.prompt_tokens == prompt_tokens)
                .map_or(0.0, |p| p.tok_s)
        })
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
pub(crate) mod tests;
