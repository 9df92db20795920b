use super::*;

#[test]
fn median_of_an_odd_count_is_the_middle_value() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[5.0]), 5.0);
}

#[test]
fn median_of_an_even_count_is_the_mean_of_the_middle_two() {
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    assert_eq!(median(&[]), 0.0);
}

#[test]
fn min_max_spans_the_runs() {
    assert_eq!(min_max(&[2.0, 7.5, 1.25]), (1.25, 7.5));
    assert_eq!(min_max(&[]), (0.0, 0.0));
    let s = Spread::of(&[10.0, 30.0, 20.0]);
    assert_eq!((s.median, s.min, s.max), (20.0, 10.0, 30.0));
}

#[test]
fn quarter_rates_time_the_first_and_last_quarter_of_the_steps() {
    // 8 steps: the first two take 0.1 s each, the last two 0.2 s each.
    let steps = [0.1, 0.1, 0.15, 0.15, 0.15, 0.15, 0.2, 0.2];
    let (first, last) = quarter_rates(&steps);
    assert!((first - 10.0).abs() < 1e-9, "{first}");
    assert!((last - 5.0).abs() < 1e-9, "{last}");
    // Fewer than four steps: a quarter is one step.
    assert_eq!(quarter_rates(&[0.5, 0.25]), (2.0, 4.0));
    assert_eq!(quarter_rates(&[]), (0.0, 0.0));
}

pub(crate) fn run(load_s: f64, decode: f64, p128: f64) -> RunFigures {
    RunFigures {
        load_s,
        ttft_ms: load_s * 100.0,
        prefill: vec![
            PrefillFigure {
                prompt_tokens: 128,
                tok_s: p128,
            },
            PrefillFigure {
                prompt_tokens: 512,
                tok_s: p128 / 2.0,
            },
        ],
        decode_tok_s: decode,
        decode_tok_s_first_quarter: decode * 1.1,
        decode_tok_s_last_quarter: decode * 0.9,
        generated_tokens: 128,
        grammar_ms_per_token: None,
        speculation: None,
        depths: vec![DepthFigure {
            depth: 2560,
            prefill_tok_s: p128 / 3.0,
            decode_tok_s: decode / 2.0,
        }],
        peak_rss_bytes: 100_000_000,
    }
}

pub(crate) fn report(shape_only: bool) -> ModelReport {
    ModelReport {
        path: "/m/x.gguf".into(),
        name: None,
        shape_only,
        architecture: "llama".into(),
        quantization: "Q4_1".into(),
        parameters: 135_000_000,
        file_size_bytes: 98_000_000,
        threads: 2,
        kernels: "avx2".into(),
        context_size: 4096,
        cache_type: CacheType::F16,
        ttft_prompt_tokens: 40,
        warmup_runs: 1,
        runs: vec![
            run(0.3, 40.0, 300.0),
            run(0.1, 50.0, 200.0),
            run(0.2, 45.0, 400.0),
        ],
    }
}

#[test]
fn a_record_gives_medians_ranges_and_every_run() {
    let r = BenchRecord::from_report("smol", report(false));
    assert_eq!(r.model, "smol");
    assert_eq!(r.load_s, 0.2);
    assert_eq!(r.min_max.load_s, [0.1, 0.3]);
    assert_eq!(r.decode_tok_s, 45.0);
    assert_eq!(r.min_max.decode_tok_s, [40.0, 50.0]);
    assert_eq!(
        r.prefill[0],
        PrefillFigure {
            prompt_tokens: 128,
            tok_s: 300.0
        }
    );
    assert_eq!(r.prefill[1].tok_s, 150.0);
    assert_eq!(r.min_max.prefill[1].tok_s, [100.0, 200.0]);
    assert_eq!(r.runs.len(), 3);
    assert_eq!(r.gen_tokens, 128);
}

#[test]
fn shape_only_records_say_so_in_their_name() {
    let r = BenchRecord::from_report("qwen3-4b", report(true));
    assert_eq!(r.model, "qwen3-4b (shape-only)");
    assert!(r.shape_only);
}
