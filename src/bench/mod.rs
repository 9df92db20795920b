//! `taper bench`: cold start, time to first token, prefill and decode speed, and peak memory
//! of any set of models, at one or more thread counts.
//!
//! Every (model, threads) pair is measured in a fresh process: this binary re-executed with
//! a hidden `bench --measure-one` that sets its threads before candle starts, measures
//! ([`measure`]) and prints one JSON [`summary::ModelReport`] on stdout. So one model's
//! memory never counts against the next, and thread pools start with the right size. This
//! process aggregates the reports ([`summary`]) and prints a table, JSON or Markdown
//! ([`report`]).
//!
//! Catalogue models not on disk can be measured by shape ([`shape`]): a temporary GGUF with
//! random weights and the real model's architecture, dimensions, vocabulary size and quant
//! mix, marked "shape-only" wherever its results are shown.

pub mod fill;
pub mod machine;
pub mod measure;
pub mod prompt;
pub mod quant;
pub mod report;
pub mod shape;
mod shape_gemma4;
pub mod speculation;
pub mod summary;

use crate::catalog::CatalogEntry;
use crate::protocol::{CacheType, Speculation};
use crate::stats::{human_bytes, secs};
use anyhow::{anyhow, bail, Context, Result};
use report::Settings;
use shape::ShapeSource;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use summary::{BenchRecord, ModelReport};

/// Something to measure.
#[derive(Debug, Clone)]
pub enum Target {
    /// A GGUF file, and the name to show for it.
    /// With `--speculative draft`, the draft model for it.
    File {
        name: String,
        path: PathBuf,
        draft: Option<PathBuf>,
    },
    /// A catalogue entry measured by shape.
    Shape(&'static CatalogEntry),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Markdown,
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub targets: Vec<Target>,
    /// Thread counts to run; None = the engine's default.
    pub threads: Vec<Option<usize>>,
    pub runs: usize,
    pub prompt_tokens: Vec<usize>,
    pub gen_tokens: usize,
    pub context_size: usize,
    pub cache_type: CacheType,
    /// Depths at which prefill and decode are measured as well (none: not measured).
    pub depths: Vec<usize>,
    pub format: Format,
    /// Keep shape-only files here (a file, or a directory for several) instead of a temp dir.
    pub keep_shape_file: Option<PathBuf>,
    /// Loads read repacked matrices back from the repack cache (written by the warm-up).
    pub repack_cache: bool,
    /// Runs thrown away before the measured ones ([`measure::WARMUP_RUNS`], or 0).
    pub warmup_runs: usize,
    /// Decode held to the JSON Schema in this file.
    pub json_schema: Option<PathBuf>,
    /// Measure speculative decoding beside plain decode.
    pub speculation: Speculation,
}

impl BenchOptions {
    fn validate(&self) -> Result<()> {
        if self.runs == 0 {
            bail!("--runs must be at least 1");
        }
        if self.gen_tokens < 2 {
            bail!("--gen-tokens must be at least 2 (decode speed is timed after the first token)");
        }
        if self.depths.contains(&0) {
            bail!("--depth needs depths of at least 1 token (depth 0 is the plain decode column)");
        }
        if self.prompt_tokens.is_empty() || self.prompt_tokens.contains(&0) {
            bail!("--prompt-tokens needs one or more lengths of at least 1 token");
        }
        if self.threads.contains(&Some(0)) {
            bail!("--threads must be at least 1");
        }
        for target in &self.targets {
            if let Target::Shape(entry) = target {
                // Refuse what cannot be built before anything is measured.
                shape::plan(ShapeSource::from_entry(entry)?)?;
            }
        }
        let shapes = self
            .targets
            .iter()
            .filter(|t| matches!(t, Target::Shape(_)));
        if let Some(keep) = &self.keep_shape_file {
            if shapes.count() > 1 && !keep.is_dir() {
                bail!(
                    "--keep-shape-file {}: with several --shape it must be an existing directory",
                    keep.display()
                );
            }
        }
        Ok(())
    }

    fn settings(&self) -> Settings {
        Settings {
            runs: self.runs,
            warmup_runs: self.warmup_runs,
            prompt_tokens: self.prompt_tokens.clone(),
            gen_tokens: self.gen_tokens,
            depths: self.depths.clone(),
        }
    }
}

/// Measures every target at every thread count and prints the chosen output on stdout
/// (progress goes to stderr). Models that fail are reported and the others still shown.
pub fn run(opts: &BenchOptions) -> Result<()> {
    opts.validate()?;
    let mut records = Vec::new();
    let mut failures = Vec::new();
    for target in &opts.targets {
        let (name, prepared) = match prepare(target, opts) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("taper bench: {e:#}");
                failures.push(target_name(target));
                continue;
            }
        };
        for &threads in &opts.threads {
            let draft = match target {
                Target::File { draft, .. } => draft.as_deref(),
                Target::Shape(_) => None,
            };
            match measure_in_child(&prepared.path, draft, threads, opts) {
                Ok(report) => records.push(BenchRecord::from_report(&name, report)),
                Err(e) => {
                    eprintln!("taper bench: {name}: {e:#}");
                    failures.push(name.clone());
                }
            }
        }
        if let Some(dir) = prepared.temp_dir {
            let _ = dir.close();
        }
    }
    let settings = opts.settings();
    let output = match opts.format {
        Format::Table => report::table(&records, &settings),
        Format::Json => report::json(&records)? + "\n",
        Format::Markdown => report::markdown(&records, &settings, &machine::Machine::detect()),
    };
    if !records.is_empty() || opts.format == Format::Json {
        print!("{output}");
    }
    if !failures.is_empty() {
        bail!("could not measure: {}", failures.join(", "));
    }
    Ok(())
}

fn target_name(target: &Target) -> String {
    match target {
        Target::File { name, .. } => name.clone(),
        Target::Shape(entry) => summary::label(&entry.name, true),
    }
}

/// The file to measure; a shape-only file is written first (into a temp dir unless kept).
struct Prepared {
    path: PathBuf,
    temp_dir: Option<tempfile::TempDir>,
}

fn prepare(target: &Target, opts: &BenchOptions) -> Result<(String, Prepared)> {
    let entry = match target {
        Target::File { name, path, .. } => {
            let prepared = Prepared {
                path: path.clone(),
                temp_dir: None,
            };
            return Ok((name.clone(), prepared));
        }
        Target::Shape(entry) => *entry,
    };
    let file_name = format!("{}.shape-only.gguf", entry.name);
    let (path, temp_dir) = match &opts.keep_shape_file {
        Some(keep) if keep.is_dir() => (keep.join(file_name), None),
        Some(keep) => (keep.clone(), None),
        None => {
            let dir = tempfile::Builder::new().prefix("taper-bench-").tempdir()?;
            (dir.path().join(file_name), Some(dir))
        }
    };
    write_shape(entry, &path)?;
    let prepared = Prepared { path, temp_dir };
    Ok((entry.name.clone(), prepared))
}

fn write_shape(entry: &CatalogEntry, path: &Path) -> Result<()> {
    let started = Instant::now();
    eprintln!(
        "taper bench: writing a shape-only {} ({}) to {}",
        entry.name,
        human_bytes(entry.size_bytes),
        path.display()
    );
    let bytes = shape::write_shape_file(ShapeSource::from_entry(entry)?, path)?;
    eprintln!(
        "taper bench: wrote {} in {:.1} s",
        human_bytes(bytes),
        secs(started.elapsed())
    );
    Ok(())
}

/// Re-executes this binary to measure one model at one thread count in a fresh process.
fn measure_in_child(
    path: &Path,
    draft: Option<&Path>,
    threads: Option<usize>,
    opts: &BenchOptions,
) -> Result<ModelReport> {
    let exe = std::env::current_exe().context("cannot find the taper executable")?;
    let lengths: Vec<String> = opts.prompt_tokens.iter().map(usize::to_string).collect();
    let mut cmd = Command::new(exe);
    cmd.arg("bench")
        .arg("--measure-one")
        .arg("--model")
        .arg(path)
        .args(["--runs", &opts.runs.to_string()])
        .args(["--prompt-tokens", &lengths.join(",")])
        .args(["--gen-tokens", &opts.gen_tokens.to_string()])
        .args(["--ctx-size", &opts.context_size.to_string()])
        .args(["--cache-type", &opts.cache_type.to_string()]);
    if !opts.depths.is_empty() {
        let depths: Vec<String> = opts.depths.iter().map(usize::to_string).collect();
        cmd.args(["--depth", &depths.join(",")]);
    }
    if let Some(n) = threads {
        cmd.args(["--threads", &n.to_string()]);
    }
    if opts.warmup_runs == 0 {
        cmd.arg("--no-warmup");
    }
    if !opts.repack_cache {
        cmd.arg("--no-repack-cache");
    }
    if let Some(schema) = &opts.json_schema {
        cmd.arg("--json-schema").arg(schema);
    }
    match draft {
        Some(draft) => cmd
            .arg("--speculative")
            .arg(format!("draft={}", draft.display())),
        None => cmd.arg("--speculative").arg(opts.speculation.to_string()),
    };
    let threads_text = threads.map_or("default".into(), |n| n.to_string());
    eprintln!(
        "taper bench: measuring {} with {threads_text} threads ({} warm-up + {} runs)",
        path.display(),
        opts.warmup_runs,
        opts.runs
    );
    let started = Instant::now();
    let output = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .context("cannot start the measuring process")?;
    if !output.status.success() {
        bail!("the measuring process failed ({})", output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| anyhow!("the measuring process printed no report"))?;
    let report: ModelReport =
        serde_json::from_str(line).context("the measuring process printed a broken report")?;
    eprintln!("taper bench: done in {:.1} s", secs(started.elapsed()));
    Ok(report)
}

/// The hidden `bench --measure-one`: measure and print one report line on stdout. Threads
/// must already be set (before any candle work).
pub fn measure_one(opts: &measure::MeasureOptions) -> Result<()> {
    let report = measure::measure(opts)?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
