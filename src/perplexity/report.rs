//! The results as text (llama-perplexity's own lines, so outputs can be compared side by
//! side) and as one JSON object.

use super::kld::{KldReport, Spread};
use super::stats::Estimate;
use super::Summary;
use serde_json::{json, Value};
use std::fmt::Write;

/// What was measured, for the JSON record.
pub struct RunFacts {
    pub model: String,
    pub text: String,
    pub ctx_size: usize,
    pub windows: usize,
    pub text_tokens: usize,
    pub threads: usize,
    pub seconds: f64,
    pub base_written: Option<String>,
    pub base_read: Option<String>,
}

/// The final lines for stdout.
pub fn text(summary: &Summary) -> String {
    match summary {
        Summary::Perplexity { ppl, .. } => format!(
            "Final estimate: PPL = {:.4} +/- {:.5}\n",
            ppl.value, ppl.error
        ),
        Summary::Kld(r) => kld_text(r),
    }
}

fn kld_text(r: &KldReport) -> String {
    let mut s = String::from("====== Perplexity statistics ======\n");
    let est = |e: &Estimate| format!("{:10.6} ± {:10.6}", e.value, e.error);
    let _ = writeln!(s, "Mean PPL(Q)                   : {}", est(&r.ppl));
    let _ = writeln!(s, "Mean PPL(base)                : {}", est(&r.ppl_base));
    let _ = writeln!(
        s,
        "Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2}%",
        100.0 * r.correlation
    );
    let _ = writeln!(
        s,
        "Mean ln(PPL(Q)/PPL(base))     : {}",
        est(&r.ln_ppl_ratio)
    );
    let _ = writeln!(s, "Mean PPL(Q)/PPL(base)         : {}", est(&r.ppl_ratio));
    let _ = writeln!(s, "Mean PPL(Q)-PPL(base)         : {}", est(&r.ppl_diff));
    s.push_str("\n====== KL divergence statistics ======\n");
    let _ = writeln!(s, "Mean    KLD: {}", est(&r.kld));
    spread_lines(&mut s, "KLD", &r.kld_spread, false);
    s.push_str("\n====== Token probability statistics ======\n");
    let pct = |e: &Estimate| format!("{:6.3} ± {:5.3} %", 100.0 * e.value, 100.0 * e.error);
    let _ = writeln!(s, "Mean    Δp: {}", pct(&r.p_diff));
    spread_lines(&mut s, "Δp", &r.p_diff_spread, true);
    let _ = writeln!(s, "RMS Δp    : {}", pct(&r.p_diff_rms));
    let _ = writeln!(s, "Same top p: {}", pct(&r.same_top));
    s
}

/// The percentile lines; Δp in percent (with its quartiles), KLD as is.
fn spread_lines(s: &mut String, name: &str, v: &Spread, percent: bool) {
    let mut rows = vec![
        ("Maximum", v.max),
        ("99.9%  ", v.p99_9),
        ("99.0%  ", v.p99),
        ("95.0%  ", v.p95),
        ("90.0%  ", v.p90),
    ];
    if percent {
        rows.push(("75.0%  ", v.p75));
    }
    rows.push(("Median ", v.median));
    if percent {
        rows.push(("25.0%  ", v.p25));
    }
    rows.extend([
        ("10.0%  ", v.p10),
        (" 5.0%  ", v.p5),
        (" 1.0%  ", v.p1),
        (" 0.1%  ", v.p0_1),
        ("Minimum", v.min),
    ]);
    for (label, value) in rows {
        let _ = if percent {
            writeln!(s, "{label} {name}: {:6.3}%", 100.0 * value)
        } else {
            writeln!(s, "{label} {name}: {value:10.6}")
        };
    }
}

/// One JSON object: the run's facts and its results.
pub fn json(summary: &Summary, facts: &RunFacts) -> Value {
    let mut record = json!({
        "model": facts.model,
        "text": facts.text,
        "ctx_size": facts.ctx_size,
        "windows": facts.windows,
        "text_tokens": facts.text_tokens,
        "threads": facts.threads,
        "seconds": facts.seconds,
    });
    let fields = match summary {
        Summary::Perplexity { ppl, positions } => json!({
            "positions": positions,
            "ppl": ppl.value,
            "ppl_error": ppl.error,
            "kl_divergence_base_written": facts.base_written,
        }),
        Summary::Kld(r) => json!({
            "positions": r.positions,
            "ppl": r.ppl.value,
            "ppl_error": r.ppl.error,
            "kl_divergence_base": facts.base_read,
            "kl_divergence": r,
        }),
    };
    if let (Some(all), Value::Object(more)) = (record.as_object_mut(), fields) {
        all.extend(more);
    }
    record
}

#[cfg(test)]
mod tests {
    use super::super::kld::{term, KldSums};
    use super::super::kld_file::encode_row;
    use super::*;

    #[test]
    fn perplexity_line_is_llama_cpp_s() {
        let s = Summary::Perplexity {
            ppl: Estimate {
                value: 12.345678,
                error: 0.1234567,
            },
            positions: 100,
        };
        assert_eq!(text(&s), "Final estimate: PPL = 12.3457 +/- 0.12346\n");
    }

    #[test]
    fn kld_text_and_json_carry_every_statistic() {
        let mut sums = KldSums::default();
        let mut base = vec![0u16; 12];
        for k in 0..20 {
            let logits: Vec<f32> = (0..8).map(|i| ((i * k) % 5) as f32).collect();
            encode_row(&logits, 1, &mut base);
            sums.push(&term(&logits, &base, 1));
        }
        let summary = Summary::Kld(Box::new(sums.report()));
        let out = text(&summary);
        for line in [
            "Mean    KLD:",
            "Same top p: 100.000",
            "Median  Δp:",
            "99.9%   KLD:",
        ] {
            assert!(out.contains(line), "{line} missing in\n{out}");
        }
        let facts = RunFacts {
            model: "m".into(),
            text: "t".into(),
            ctx_size: 8,
            windows: 2,
            text_tokens: 16,
            threads: 1,
            seconds: 0.5,
            base_written: None,
            base_read: Some("b".into()),
        };
        let v = json(&summary, &facts);
        assert_eq!(v["positions"], 20);
        assert_eq!(v["kl_divergence"]["same_top"]["value"], 1.0);
        assert_eq!(v["ctx_size"], 8);
    }
}
