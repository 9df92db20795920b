//! The repack cache from the command line: a load writes it, `taper models` and `taper models
//! cache` show it, `--prune` frees it, and `--no-repack-cache` or `repack_cache = false` keep a
//! load from writing it.

use crate::common;
use std::path::Path;
use std::process::{Command, Output};

/// `taper ARGS` with `home` as TAPER_HOME.
fn taper(home: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_taper"))
        .args(args)
        .env("TAPER_HOME", home)
        .output()
        .expect("taper runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A one-token answer from the SmolLM2 test model, with `extra` flags.
fn ask(home: &Path, extra: &[&str]) {
    let model = common::real_model(common::SMOLLM2);
    let model = model.to_str().expect("a UTF-8 path");
    let mut args = vec!["ask", "-n", "1", "-m", model];
    args.extend_from_slice(extra);
    args.push("Hi");
    taper(home, &args);
}

fn cache_files(home: &Path) -> usize {
    std::fs::read_dir(home.join("cache/repacked")).map_or(0, |d| d.count())
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether this machine's kernel path repacks SmolLM2's Q4_1 (x86's SIMD paths do).
fn repacks() -> bool {
    use taper::engine::model::kernels::Format;
    taper::engine::model::runtime::kernel_path::isa()
        .packed_layout(Format::Q4_1)
        .is_some()
}

#[test]
fn a_load_fills_the_cache_and_prune_empties_it() {
    let home = tempfile::tempdir().expect("temp dir");
    let empty = stdout(&taper(home.path(), &["models", "cache"]));
    assert!(empty.contains("Repack cache: 0 B in "), "{empty}");
    ask(home.path(), &[]);
    if !repacks() {
        assert_eq!(cache_files(home.path()), 0);
        return;
    }
    assert_eq!(
        cache_files(home.path()),
        1,
        "written before the process ended"
    );
    let listed = stdout(&taper(home.path(), &["models", "cache"]));
    assert!(
        listed.contains("SmolLM2-135M-Instruct.Q4_1.") && listed.contains(" MB  "),
        "{listed}"
    );
    let models = stdout(&taper(home.path(), &["models"]));
    assert!(
        models.contains("Repack cache: ") && !models.contains("Repack cache: 0 B"),
        "{models}"
    );
    let pruned = stdout(&taper(home.path(), &["models", "cache", "--prune"]));
    assert!(pruned.starts_with("Removed 1 file ("), "{pruned}");
    assert_eq!(cache_files(home.path()), 0);
}

#[test]
fn the_flag_and_the_config_turn_the_cache_off() {
    let home = tempfile::tempdir().expect("temp dir");
    ask(home.path(), &["--no-repack-cache"]);
    assert_eq!(cache_files(home.path()), 0, "--no-repack-cache");
    std::fs::write(home.path().join("config.toml"), "repack_cache = false\n").expect("config");
    ask(home.path(), &[]);
    assert_eq!(cache_files(home.path()), 0, "repack_cache = false");
    let off = stdout(&taper(home.path(), &["models", "cache"]));
    assert!(
        off.contains("Repack cache: off (repack_cache = false"),
        "{off}"
    );
}
