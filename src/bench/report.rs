//! The bench's three outputs: a terminal table (with a bar per model for decode tok/s),
//! JSON (one record per model × threads) and Markdown (the README's benchmark section,
//! machine included). Shape-only results are marked in all three.

use super::machine::Machine;
use super::summary::{BenchRecord, Spread, SHAPE_ONLY};
use crate::stats::human_bytes;
use anyhow::Result;
use std::fmt::Write as _;

/// How the runs were made, for the outputs' captions.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub runs: usize,
    pub warmup_runs: usize,
    pub prompt_tokens: Vec<usize>,
    pub gen_tokens: usize,
    pub depths: Vec<usize>,
}

pub fn json(records: &[BenchRecord]) -> Result<String> {
    Ok(serde_json::to_string_pretty(records)?)
}

/// `1234`, `45.6`, `7.89`: three significant digits or so.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The median, and the min–max when the runs differ.
pub fn with_range(s: Spread) -> String {
    if s.min == s.max {
        number(s.median)
    } else {
        format!("{} ({}–{})", number(s.median), number(s.min), number(s.max))
    }
}

/// A horizontal bar of `width` cells for `value` out of `max`, in eighths of a cell.
pub fn bar(value: f64, max: f64, width: usize) -> String {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    // NaN and non-positive values get no bar.
    if max.is_nan() || value.is_nan() || max <= 0.0 || value <= 0.0 {
        return String::new();
    }
    let eighths = ((value / max).min(1.0) * (width * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        s.push(PARTS[eighths % 8]);
    }
    // Something visible for any measured speed.
    if s.is_empty() {
        s.push('▏');
    }
    s
}

/// The figures of a record as table cells, in [`headers`] order.
fn cells(r: &BenchRecord, settings: &Settings) -> Vec<String> {
    let mut row = vec![
        r.model.clone(),
        r.threads.to_string(),
        r.kernels.clone(),
        human_bytes(r.file_size_bytes),
        r.cache_type.to_string(),
        with_range(r.spread_of(|x| x.load_s)),
        with_range(r.spread_of(|x| x.ttft_ms)),
    ];
    for &n in &settings.prompt_tokens {
        row.push(with_range(r.prefill_spread(n)));
    }
    row.push(with_range(r.spread_of(|x| x.decode_tok_s)));
    row.push(format!(
        "{} → {}",
        number(r.decode_tok_s_first_quarter),
        number(r.decode_tok_s_last_quarter)
    ));
    for &depth in &settings.depths {
        row.push(with_range(r.depth_spread(depth, |d| d.prefill_tok_s)));
        row.push(with_range(r.depth_spread(depth, |d| d.decode_tok_s)));
    }
    row.push(human_bytes(r.peak_rss_bytes));
    row
}

fn headers(settings: &Settings) -> Vec<String> {
    let mut h: Vec<String> = [
        "model", "threads", "kernels", "file", "KV", "load s", "TTFT ms",
    ]
    .map(String::from)
    .to_vec();
    for n in &settings.prompt_tokens {
        h.push(format!("prefill {n} tok/s"));
    }
    h.push("decode tok/s".into());
    h.push("decode ¼ first → last".into());
    for depth in &settings.depths {
        h.push(format!("prefill {depth} tok/s"));
        h.push(format!("decode @{depth} tok/s"));
    }
    h.push("peak RSS".into());
    h
}

fn caption(settings: &Settings) -> String {
    let depths = if settings.depths.is_empty() {
        String::new()
    } else {
        format!(
            "; at depth {}: prefill of that many tokens, then decode of {} tokens right after it",
            join_and(&settings.depths),
            settings.gen_tokens
        )
    };
    format!(
        "Median (min–max) of {} run{} after {}; prefill of {} tokens of English text; \
         decode of {} greedy tokens after a short chat prompt{depths}. kernels: the kernel path \
         (TAPER_KERNELS forces one); KV: the cache's number format.",
        settings.runs,
        if settings.runs == 1 { "" } else { "s" },
        match settings.warmup_runs {
            0 => "no warm-up".to_string(),
            n => format!("{n} warm-up"),
        },
        join_and(&settings.prompt_tokens),
        settings.gen_tokens,
    )
}

fn join_and(values: &[usize]) -> String {
    let v: Vec<String> = values.iter().map(usize::to_string).collect();
    match v.len() {
        0 => String::new(),
        1 => v[0].clone(),
        n => format!("{} and {}", v[..n - 1].join(", "), v[n - 1]),
    }
}

/// Notes under a table: what shape-only means, and the TTFT prompt lengths.
fn notes(records: &[BenchRecord]) -> Vec<String> {
    let mut notes = Vec::new();
    let prompts: Vec<String> = records
        .iter()
        .map(|r| format!("{} {}", r.model, r.ttft_prompt_tokens))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    notes.push(format!("TTFT prompt tokens: {}.", prompts.join(", ")));
    for r in records {
        let costs: Vec<f64> = r
            .runs
            .iter()
            .filter_map(|f| f.grammar_ms_per_token)
            .collect();
        if costs.is_empty() {
            continue;
        }
        let ms = super::summary::median(&costs);
        let step_ms = if r.decode_tok_s > 0.0 {
            1000.0 / r.decode_tok_s
        } else {
            0.0
        };
        notes.push(format!(
            "{}: decoding held to the JSON schema; the grammar took {ms:.3} ms per token \
             ({:.1}% of a {step_ms:.2} ms decode step).",
            r.model,
            if step_ms > 0.0 {
                100.0 * ms / step_ms
            } else {
                0.0
            },
        ));
    }
    for r in records {
        notes.extend(super::speculation::notes(r));
    }
    if records.iter().any(|r| r.shape_only) {
        notes.push(format!(
            "({SHAPE_ONLY}): a file with random weights and exactly the catalogue model's \
             architecture, dimensions, vocabulary size and quantization mix. Speed and memory \
             only; text quality is not measured. Its prompts are token ids, as many as real \
             text would have."
        ));
    }
    notes
}

/// The terminal table: aligned columns, a bar per row for decode tok/s.
pub fn table(records: &[BenchRecord], settings: &Settings) -> String {
    const BAR_WIDTH: usize = 20;
    let mut rows = vec![headers(settings)];
    rows.extend(records.iter().map(|r| cells(r, settings)));
    let decode_col = 5 + settings.prompt_tokens.len();
    let max_decode = records.iter().map(|r| r.decode_tok_s).fold(0.0, f64::max);
    for (i, row) in rows.iter_mut().enumerate() {
        let b = match i {
            0 => String::new(),
            _ => bar(records[i - 1].decode_tok_s, max_decode, BAR_WIDTH),
        };
        row.insert(decode_col + 1, b);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", caption(settings));
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            // The model name and the bar read left to right; numbers line up on the right.
            if c == 0 || c == decode_col + 1 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
            line.push_str("  ");
        }
        let _ = writeln!(out, "{}", line.trim_end());
        if i == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
            let _ = writeln!(out, "{}", "─".repeat(total));
        }
    }
    out.push('\n');
    for note in notes(records) {
        let _ = writeln!(out, "{note}");
    }
    out
}

/// The README's benchmark section: machine, settings, table and notes.
pub fn markdown(records: &[BenchRecord], settings: &Settings, machine: &Machine) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Benchmarks\n");
    let _ = writeln!(
        out,
        "Produced by `taper bench --markdown` (taper {}) on this machine:\n",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(out, "| machine | |\n| --- | --- |");
    let _ = writeln!(out, "| CPU | {} |", escape(&machine.cpu));
    let _ = writeln!(out, "| cores | {} |", machine.cores());
    let _ = writeln!(out, "| RAM | {} |", machine.ram());
    let _ = writeln!(out, "| OS | {} |\n", escape(&machine.os));
    let _ = writeln!(out, "{}\n", caption(settings));
    let headers = headers(settings);
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let align: Vec<&str> = (0..headers.len())
        .map(|c| if c == 0 { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "| {} |", align.join(" | "));
    for r in records {
        let row: Vec<String> = cells(r, settings).iter().map(|c| escape(c)).collect();
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
    for note in notes(records) {
        let _ = writeln!(out, "{note}\n");
    }
    out
}

fn escape(cell: &str) -> String {
    cell.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::summary::tests::report;

    fn settings() -> Settings {
        Settings {
            runs: 3,
            warmup_runs: 1,
            prompt_tokens: vec![128, 512],
            gen_tokens: 128,
            depths: vec![2560],
        }
    }

    fn records() -> Vec<BenchRecord> {
        vec![
            BenchRecord::from_report("SmolLM2-135M", report(false)),
            BenchRecord::from_report("qwen3-4b", report(true)),
        ]
    }

    #[test]
    fn numbers_keep_about_three_digits() {
        assert_eq!(number(1234.4), "1234");
        assert_eq!(number(45.67), "45.7");
        assert_eq!(number(7.891), "7.89");
        assert_eq!(with_range(Spread::of(&[1.0, 2.0, 3.0])), "2.00 (1.00–3.00)");
        assert_eq!(with_range(Spread::of(&[5.0])), "5.00");
    }

    #[test]
    fn bars_are_proportional_in_eighths() {
        assert_eq!(bar(10.0, 10.0, 4), "████");
        assert_eq!(bar(5.0, 10.0, 4), "██");
        assert_eq!(bar(1.0, 2.0, 2), "█");
        assert_eq!(bar(1.0, 4.0, 2), "▌");
        assert_eq!(bar(11.0, 16.0, 2), "█▍");
        assert_eq!(bar(0.0, 10.0, 4), "");
        assert_eq!(bar(0.001, 10.0, 4), "▏");
    }

    #[test]
    fn the_table_has_a_bar_per_model_and_marks_shape_only_rows() {
        let t = table(&records(), &settings());
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines.iter().any(|l| l.contains("prefill 512 tok/s")), "{t}");
        let smol = lines
            .iter()
            .find(|l| l.starts_with("SmolLM2-135M"))
            .unwrap();
        let shape = lines
            .iter()
            .find(|l| l.starts_with("qwen3-4b (shape-only)"))
            .unwrap();
        assert!(smol.contains('█') && shape.contains('█'), "{t}");
        assert!(smol.contains("45.0 (40.0–50.0)"), "{smol}");
        assert!(t.contains("decode @2560 tok/s") && t.contains("KV"), "{t}");
        assert!(smol.contains(" f16 "), "{smol}");
        assert!(t.contains("text quality is not measured"), "{t}");
    }

    #[test]
    fn json_has_the_keys_the_issue_names() {
        let text = json(&records()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let rows = v.as_array().unwrap();
        assert_eq!(rows.len(), 2);
        for key in [
            "model",
            "file_size_bytes",
            "threads",
            "load_s",
            "ttft_ms",
            "prefill",
            "decode_tok_s",
            "decode_tok_s_first_quarter",
            "decode_tok_s_last_quarter",
            "peak_rss_bytes",
            "runs",
            "shape_only",
            "min_max",
        ] {
            assert!(rows[0].get(key).is_some(), "{key}");
        }
        assert_eq!(rows[0]["prefill"][1]["prompt_tokens"], 512);
        assert!(rows[0]["prefill"][1]["tok_s"].as_f64().unwrap() > 0.0);
        assert_eq!(rows[0]["runs"].as_array().unwrap().len(), 3);
        assert_eq!(rows[0]["cache_type"], "f16");
        assert_eq!(rows[0]["depths"][0]["depth"], 2560);
        assert_eq!(rows[0]["depths"][0]["decode_tok_s"], 22.5);
        assert!(rows[0]["depths"][0]["prefill_tok_s"].as_f64().unwrap() > 0.0);
        assert_eq!(rows[1]["shape_only"], true);
        assert_eq!(rows[1]["model"], "qwen3-4b (shape-only)");
    }

    #[test]
    fn markdown_has_the_machine_section_and_the_shape_only_marker() {
        let machine = Machine::from_texts(
            "processor : 0\nmodel name : Test CPU 9000\n",
            "MemTotal: 8388608 kB\n",
            "PRETTY_NAME=\"Test OS 1\"\n",
            "6.1.0",
            1,
        );
        let md = markdown(&records(), &settings(), &machine);
        for needle in [
            "## Benchmarks",
            "| CPU | Test CPU 9000 |",
            "| cores | 1 |",
            "| RAM | 8.0 GiB |",
            "| OS | Test OS 1, Linux 6.1.0 |",
            "| qwen3-4b (shape-only) |",
            "text quality is not measured",
            "| model | threads | kernels | file |",
        ] {
            assert!(md.contains(needle), "{needle}\n{md}");
        }
        // Every table row has as many cells as the header.
        let table_rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        let header_cells = table_rows
            .iter()
            .find(|l| l.starts_with("| model"))
            .unwrap()
            .matches(" | ")
            .count();
        for row in table_rows.iter().skip_while(|l| !l.starts_with("| model")) {
            assert_eq!(row.matches(" | ").count(), header_cells, "{row}");
        }
    }

    #[test]
    fn the_caption_says_whether_a_warm_up_ran() {
        assert!(caption(&settings()).starts_with("Median (min–max) of 3 runs after 1 warm-up;"));
        let none = Settings {
            runs: 1,
            warmup_runs: 0,
            ..settings()
        };
        assert!(caption(&none).starts_with("Median (min–max) of 1 run after no warm-up;"));
    }
}
